# Packages from this checkout into dist/ (docs/packaging.md). The work is in packaging/build.sh.
.PHONY: packages deb rpm packaging-tools

packages:
	bash packaging/build.sh

deb:
	bash packaging/build.sh --deb

rpm:
	bash packaging/build.sh --rpm

packaging-tools:
	bash packaging/build.sh --install-tools
