#!/bin/bash
# inspect.sh — run as root in flightdeck's own inspector, a container of the
# offline base image in the engine host's PID namespace: it reads a trial
# container's filesystem through /proc/PID/root (PID: that container's main
# process) with its own tools, which nothing in the trial's container can
# change, and out of its processes' sight. Absolute symlinks there are
# resolved by hand (the kernel would resolve them in the inspector's own
# root).
#
#   inspect.sh PID list SINCE [WORKDIR [UNWALKED...]]
#                                    every non-directory changed after SINCE
#                                    (seconds since the epoch), outside
#                                    WORKDIR, the UNWALKED trees (find -path
#                                    patterns), /proc, /sys, /dev and other
#                                    mounts: "TYPE PATH\0"; then the
#                                    container's processes, "P PID START\0"
#                                    (START: clock ticks since boot), and
#                                    "K TICKS UPTIME NOW\0" (ticks a second,
#                                    seconds since boot, since the epoch)
#   inspect.sh PID dpkg PATH...          each path's owning package by dpkg's
#                                    records and MD5s (the record's, the
#                                    content's, symlinks followed):
#                                    "PATH\tPACKAGE\tRECORD\tCONTENT\n"
set -u
pid="$1"
root="/proc/$1/root"
shift
cd "$root" || { echo "inspect.sh: cannot read the container's filesystem" >&2; exit 3; }
case "$1" in
list)
	since="$2"
	wd="${3:-}"
	wd="${wd#/}"
	prune=(-path ./proc -o -path ./sys -o -path ./dev)
	[ -n "$wd" ] && prune+=(-o -path "./$wd")
	shift 3 2>/dev/null || shift $#
	for u in "$@"; do prune+=(-o -path "./${u#/}"); done
	find . -xdev \( "${prune[@]}" \) -prune -o ! -type d -newerct "@$since" -printf '%y /%P\0' | head -z -n 100000
	ns="$(stat -L -c %i "/proc/$pid/ns/pid")"
	stat -L -c '%i %n' /proc/[0-9]*/ns/pid 2>/dev/null | awk -v ns="$ns" '$1 == ns {
		split($2, a, "/"); f = "/proc/" a[3] "/stat"
		if ((getline s < f) > 0) { sub(/^.*\) /, "", s); split(s, x, " "); printf "P %s %s\n", a[3], x[20] }
		close(f)
	}' | tr '\n' '\0'
	printf 'K %s %s %s\0' "$(getconf CLK_TCK)" "$(cut -d' ' -f1 /proc/uptime)" "$(date +%s.%N)"
	;;
dpkg)
	shift
	for p in "$@"; do
		t="$p"
		i=0
		while [ -L "$root$t" ] && [ $i -lt 16 ]; do
			l="$(readlink "$root$t")"
			case "$l" in /*) t="$l" ;; *) t="$(dirname "$t")/$l" ;; esac
			t="$(realpath -m -s "$t")"
			i=$((i + 1))
		done
		sum="$(md5sum <"$root$t" 2>/dev/null | cut -d' ' -f1)"
		rec="$(awk -v p="${t#/}" 'substr($0, 35) == p { n = FILENAME; sub(/.*\//, "", n); sub(/\.md5sums$/, "", n); print n "\t" $1; exit }' var/lib/dpkg/info/*.md5sums 2>/dev/null)"
		[ -n "$rec" ] || rec="	"
		printf '%s\t%s\t%s\n' "$p" "$rec" "$sum"
	done
	;;
*)
	echo "inspect.sh: unknown mode $1" >&2
	exit 2
	;;
esac
