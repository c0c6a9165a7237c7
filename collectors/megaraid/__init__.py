"""LSI/Avago/Broadcom MegaRAID and Dell PERC controllers: storcli/perccli JSON, MegaCli text.

The pure parsers are :mod:`.storcli` and :mod:`.megacli`; the source is :mod:`.source`."""

# Imported on first use (PEP 562): importing the package for its spec does not import the parsers
# (the agent reads the registry before it listens, issue 32).
_HOMES = {
    "parse_adapter_info": ("collectors.megaraid.megacli", "parse_adapter_info"),
    "parse_bbu": ("collectors.megaraid.megacli", "parse_bbu"),
    "parse_ldinfo": ("collectors.megaraid.megacli", "parse_ldinfo"),
    "parse_pdlist": ("collectors.megaraid.megacli", "parse_pdlist"),
    "parse_storcli_json": ("collectors.megaraid.storcli", "parse_storcli_json"),
}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'collectors.megaraid' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home[0]), home[1])
    globals()[name] = value
    return value

__all__ = ["parse_storcli_json", "parse_adapter_info", "parse_ldinfo", "parse_pdlist", "parse_bbu"]
