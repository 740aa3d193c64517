#!/bin/sh
# build-deb.sh VERSION ARCH BINARY OUT.deb: the Debian package of sonde
# (make deb), assembled with dpkg-deb from files under contrib/deb and the
# docs: /usr/bin/sonde, systemd units for `sonde serve` and `sonde monitor
# run` (user sonde, state in /var/lib/sonde), /etc/default/sonde and
# /etc/sonde/monitor.json as conffiles, the docs and sonde(1) (docs/sonde.1,
# generated from the commands).
#
# build-deb.sh VERSION ARCH BINARY OUT.deb monitor: the sonde-monitor
# package instead, for small boards: BINARY is the monitor-only build (make
# monitor-release), as /usr/bin/sonde, with the monitor's unit and
# configuration alone, and its sonde(1) (docs/sonde-monitor.1, generated
# from the monitor-only build's commands); it conflicts with sonde (one
# /usr/bin/sonde).
set -eu
version=$1 arch=$2 bin=$3 out=$4 flavour=${5:-full}
name=sonde
[ "$flavour" = monitor ] && name=sonde-monitor
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pkg=$tmp/pkg
install -d "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/usr/share/man/man1" "$pkg/lib/systemd/system" "$pkg/etc/default" "$pkg/etc/sonde" "$pkg/usr/share/doc/$name"
install -m 0755 "$bin" "$pkg/usr/bin/sonde"
install -m 0644 "$here/sonde-monitor.service" "$pkg/lib/systemd/system/"
# The monitor-only build has no SQLite: its store is a journal directory.
journal='s#/var/lib/sonde/monitor\.db#journal:/var/lib/sonde/journal#'
[ "$flavour" = monitor ] && sed -i "$journal" "$pkg/lib/systemd/system/sonde-monitor.service"
if [ "$flavour" = full ]; then
	install -m 0644 "$here/sonde.service" "$pkg/lib/systemd/system/"
	install -m 0644 "$here/sonde.default" "$pkg/etc/default/sonde"
else
	rmdir "$pkg/etc/default"
fi
install -m 0644 "$root/contrib/monitor.sample.json" "$pkg/etc/sonde/monitor.json"
[ "$flavour" = monitor ] && sed -i "$journal" "$pkg/etc/sonde/monitor.json"
install -m 0644 "$here/copyright" "$pkg/usr/share/doc/$name/copyright"
docs="README.md docs/monitor.md docs/cli.md docs/fleet.md docs/store.md"
[ "$flavour" = monitor ] && docs="README.md docs/monitor.md"
for d in $docs; do
	gzip -9n < "$root/$d" > "$pkg/usr/share/doc/$name/$(basename "$d").gz"
done
man=docs/sonde.1
[ "$flavour" = monitor ] && man=docs/sonde-monitor.1
gzip -9n < "$root/$man" > "$pkg/usr/share/man/man1/sonde.1.gz"
printf '%s (%s) unstable; urgency=medium\n\n  * Built from the sonde sources (make deb).\n\n -- sonde developers <sonde@sonde-project.invalid>  %s\n' \
	"$name" "$version" "$(date -R -d @"${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}")" |
	gzip -9n > "$pkg/usr/share/doc/$name/changelog.gz"
install -d "$pkg/usr/share/lintian/overrides"
# Go links statically; lintian exempts only Go built from a Debian source package.
printf '%s: statically-linked-binary [usr/bin/sonde]\n' "$name" > "$pkg/usr/share/lintian/overrides/$name"
install -m 0755 "$here/postinst" "$here/prerm" "$here/postrm" "$pkg/DEBIAN/"
if [ "$flavour" = full ]; then
	printf '/etc/default/sonde\n/etc/sonde/monitor.json\n' > "$pkg/DEBIAN/conffiles"
else
	printf '/etc/sonde/monitor.json\n' > "$pkg/DEBIAN/conffiles"
fi
conflicts=sonde-monitor
[ "$flavour" = monitor ] && conflicts=sonde
summary="network path measurement suite"
what="This package holds the sonde
 command and systemd units for sonde serve and sonde monitor run."
if [ "$flavour" = monitor ]; then
	summary="network path measurement suite (the monitor alone, for small boards)"
	what="This package holds the
 monitor-only build of sonde (sonde monitor: run, status, report, alerts),
 a third the size of the full command, and the systemd unit for sonde
 monitor run."
fi
size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
cat > "$pkg/DEBIAN/control" <<CONTROL
Package: $name
Version: $version
Architecture: $arch
Maintainer: sonde developers <sonde@sonde-project.invalid>
Installed-Size: $size
Depends: adduser
Conflicts: $conflicts
Section: net
Priority: optional
Homepage: https://github.com/sonde-project/sonde
Description: $summary
 sonde measures a network path against a sonde server: throughput, latency
 under load (RPM), RFC 6349 reports, UDP quality (STAMP), and monitors a
 last-mile link for years: reliability against latency requirements,
 outages and bufferbloat per load state. $what
CONTROL
(cd "$pkg" && find usr lib etc -type f ! -path 'etc/*' -exec md5sum {} + | sort -k2) > "$pkg/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$out" >/dev/null
echo "$out"
