// Package pkgtest checks gpuprep's .deb and .rpm as an admin would, in its
// tests: it builds them with `make package` (into a temporary folder), reads
// them with dpkg-deb, rpm and lintian, installs the rpm with
// `rpm --root` and the deb with dpkg into minimal Debian 12 (bookworm) and
// 13 (trixie) roots (mkroot.sh: debootstrap, cached in
// /var/cache/gpuprep-pkgtest), runs the programs there, and renders the man
// pages. It needs root, dpkg-deb, lintian, rpm, debootstrap, man and groff
// (test/install-deps.sh installs them); outside CI a missing one skips the
// test that needs it, in CI (CI=true) it is a failure.
package pkgtest
