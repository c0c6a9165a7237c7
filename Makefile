# Packages from this checkout into dist/ (docs/packaging.md). The work is in packaging/build.sh.
.PHONY: packages deb rpm packaging-tools check-packages

packages:
	bash packaging/build.sh

deb:
	bash packaging/build.sh --deb

rpm:
	bash packaging/build.sh --rpm

packaging-tools:
	bash packaging/build.sh --install-tools

# Build, lint, run with each Python and install in scratch roots (needs root; tests/test_packages.py;
# SSDFLEET_HOST_TESTS=1 lets the tests that install packages as root run, tests/conftest.py).
check-packages:
	SSDFLEET_HOST_TESTS=1 .venv/bin/python -m pytest -p no:cacheprovider tests/test_packages.py tests/test_package_hoststate.py
