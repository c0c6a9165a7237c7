"""LSI/Avago/Broadcom MegaRAID and Dell PERC controllers: storcli/perccli JSON, MegaCli text.

The pure parsers are :mod:`.storcli` and :mod:`.megacli`; the source is :mod:`.source`."""

from collectors.megaraid.megacli import parse_adapter_info, parse_bbu, parse_ldinfo, parse_pdlist
from collectors.megaraid.storcli import parse_storcli_json

__all__ = ["parse_storcli_json", "parse_adapter_info", "parse_ldinfo", "parse_pdlist", "parse_bbu"]
