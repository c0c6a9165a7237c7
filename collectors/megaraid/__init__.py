"""LSI/Avago/Broadcom MegaRAID and Dell PERC controllers: storcli/perccli JSON, MegaCli text.

The pure parsers are :mod:`.storcli` and :mod:`.megacli`; the source is :mod:`.source`."""

from collectors import lazy_exports

# Imported on first use (collectors.lazy_exports): importing the package for its spec does not
# import the parsers (the agent reads the registry before it listens, issue 32).
_HOMES = {
    "parse_adapter_info": ("collectors.megaraid.megacli", "parse_adapter_info"),
    "parse_bbu": ("collectors.megaraid.megacli", "parse_bbu"),
    "parse_ldinfo": ("collectors.megaraid.megacli", "parse_ldinfo"),
    "parse_pdlist": ("collectors.megaraid.megacli", "parse_pdlist"),
    "parse_storcli_json": ("collectors.megaraid.storcli", "parse_storcli_json"),
}

__getattr__ = lazy_exports(__name__, _HOMES)

__all__ = ["parse_storcli_json", "parse_adapter_info", "parse_ldinfo", "parse_pdlist", "parse_bbu"]
