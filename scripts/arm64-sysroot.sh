#!/bin/sh
# arm64-sysroot.sh DIR PKG...: unpack Debian's arm64 packages PKG... into
# DIR/sysroot, for make release's arm64 cross build (mk/release.mk).
#
# The host's apt is asked for arm64 packages through a state of its own
# under DIR (package lists, cache, an empty dpkg status): no
# `dpkg --add-architecture`, nothing installed on the host, and no clash
# between libdpdk-dev:amd64 and libdpdk-dev:arm64 (both "Multi-Arch: same",
# so they would have to be the same version, and every -dev package they
# pull in twice). `apt-get download` fetches exactly the named packages
# (their .debs, from the host's configured Debian mirrors, checked against
# the archive's signed lists); `dpkg -x` unpacks each. /lib is then merged
# into /usr/lib as on a usrmerged Debian 12 (libnl-3-dev ships
# /lib/aarch64-linux-gnu/libnl-3.a), and pkg-config must resolve libdpdk
# in the sysroot, or the script fails naming what is missing. Only static
# archives are kept (see below).
set -eu
dir=$(realpath -m "$1")
shift
case $dir in *[[:space:]]*)
	echo "arm64-sysroot.sh: $dir: give a directory whose path has no blanks" >&2
	exit 2
	;;
esac
apt="$dir/apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dir/debs"
: >"$apt/status"
o="-o APT::Architecture=arm64 -o APT::Architectures=arm64 -o Dir::State::Lists=$apt/lists -o Dir::Cache=$apt/cache -o Dir::State::status=$apt/status -o APT::Sandbox::User=root"
# shellcheck disable=SC2086 # $o: options without blanks in them
apt-get -qq $o update
rm -f "$dir"/debs/*.deb
# shellcheck disable=SC2086
(cd "$dir/debs" && apt-get -qq $o download "$@")
new="$dir/sysroot.new"
rm -rf "$new"
mkdir -p "$new/usr/lib"
for deb in "$dir"/debs/*.deb; do
	dpkg -x "$deb" "$new"
done
if [ -d "$new/lib" ] && [ ! -L "$new/lib" ]; then
	cp -a "$new/lib/." "$new/usr/lib/"
	rm -rf "$new/lib"
fi
ln -s usr/lib "$new/lib"
# Static archives only: the -dev packages' lib*.so are links to shared
# objects not unpacked here, or linker scripts naming /usr/lib paths of
# the host (libbsd.so); without them every -l in pkg-config's flags finds
# the .a, and nothing of the sysroot can be linked dynamically.
find "$new" \( -name '*.so' -o -name '*.so.*' \) \( -type l -o -type f \) -delete
PKG_CONFIG_SYSROOT_DIR="$new" PKG_CONFIG_LIBDIR="$new/usr/lib/aarch64-linux-gnu/pkgconfig:$new/usr/share/pkgconfig" PKG_CONFIG_PATH="" \
	pkg-config --cflags --libs libdpdk >/dev/null
rm -rf "$dir/sysroot"
mv "$new" "$dir/sysroot"
echo "arm64 sysroot $dir/sysroot: $(cd "$dir/debs" && ls | sed 's/_arm64\.deb$//' | tr '\n' ' ')"
