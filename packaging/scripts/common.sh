# --- packaging/scripts/common.sh, put here by packaging/build.sh: shared by the .deb and .rpm scripts

# The ssdfleet user and group, before the files are unpacked (/etc/ssdfleet and /var/lib/ssdfleet
# belong to them). The line is the one of /usr/lib/sysusers.d/ssdfleet.conf, not unpacked yet.
ssdfleet_create_user() {
    getent passwd ssdfleet >/dev/null 2>&1 && return 0
    if command -v systemd-sysusers >/dev/null 2>&1; then
        echo '@SYSUSERS_LINE@' | systemd-sysusers --replace=/usr/lib/sysusers.d/ssdfleet.conf -
    else
        useradd --system --user-group --home-dir /var/lib/ssdfleet --no-create-home \
            --shell /usr/sbin/nologin --comment "ssdfleet SSD health agent" ssdfleet
    fi
}

# Byte code for the python3 this host has, for the code and the libraries that Python uses (its
# own set and the shared one); the program never writes byte code itself.
ssdfleet_compile() {
    abi=$(python3 -c 'import sys; print("cp%d%d" % sys.version_info[:2])' 2>/dev/null || true)
    if [ -n "$abi" ] && [ -d "/usr/lib/ssdfleet/deps/$abi" ]; then
        python3 -m compileall -q -j 0 /usr/lib/ssdfleet/app "/usr/lib/ssdfleet/deps/$abi" \
            /usr/lib/ssdfleet/deps/common >/dev/null 2>&1 || true
    else
        echo "ssdfleet: warning: no libraries in this package for python3 ($abi); ssdfleet will not start" >&2
    fi
}

# What ssdfleet_compile made: the package manager does not know these files.
ssdfleet_forget_bytecode() {
    find /usr/lib/ssdfleet -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null || true
}
# --- end of common.sh
