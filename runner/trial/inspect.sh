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
#                                    mounts: "TYPE PATH\0" (with
#                                    $INSPECT_LAYER, the container's
#                                    writable layer, only what it holds is
#                                    looked at: see layer_list); then the
#                                    container's processes, "P PID START\0"
#                                    (START: clock ticks since boot), and
#                                    "K TICKS UPTIME NOW\0" (ticks a second,
#                                    seconds since boot, since the epoch)
#   inspect.sh PID dpkg PATH...          each path's owning package by dpkg's
#                                    records and MD5s (the record's, the
#                                    content's, symlinks followed):
#                                    "PATH\tPACKAGE\tRECORD\tCONTENT\n"
#   inspect.sh PID settle QUIET_MS CPU_MS MAX_MS
#                                    waits until the container has settled:
#                                    for QUIET_MS on end no process of its
#                                    own is running or waiting on the disk,
#                                    none started, ended or used CPU time, and
#                                    no socket began or stopped listening;
#                                    at most until its processes have used
#                                    CPU_MS of CPU time since the wait began
#                                    (a busy machine starts a service more
#                                    slowly: the bound is the work, not the
#                                    time), and never beyond MAX_MS. Prints
#                                    "settled MS" or
#                                    "unsettled MS", then what was still
#                                    changing ("busy PID COMM STATE" lines)
set -u
pid="$1"
root="/proc/$1/root"
shift
cd "$root" || { echo "inspect.sh: cannot read the container's filesystem" >&2; exit 3; }
# ns_pl is the perl both list_pl and the settle mode start with:
#   ticks       clock ticks a second, from the auxiliary vector (AT_CLKTCK):
#               what sysconf reads, without loading POSIX (a third of a
#               listing)
#   ns_stats NS the processes of the PID namespace NS (its link, as
#               /proc/PID/ns/pid reads): PID => [COMM, the fields of
#               /proc/PID/stat after COMM]
ns_pl='
use strict;
use warnings;
sub ticks {
	open(my $a, "<:raw", "/proc/self/auxv") or return 100;
	local $/;
	my %v = unpack("J*", scalar <$a>);
	return $v{17} || 100;
}
sub ns_stats {
	my ($ns) = @_;
	my %p;
	opendir(my $d, "/proc") or die "inspect.sh: /proc: $!\n";
	for my $n (grep { /^\d+$/ } readdir $d) {
		my $l = readlink("/proc/$n/ns/pid");
		next unless defined $l && $l eq $ns;
		open(my $h, "<", "/proc/$n/stat") or next;
		my $s = <$h>;
		next unless defined $s && $s =~ /^\d+ \((.*)\) (.*)$/s;
		$p{$n} = [$1, split(" ", $2)];
	}
	return \%p;
}
'
# list_pl is the list mode's perl, one process where a pipeline of shell
# tools costs a fork each (about 10 ms apiece on a loaded machine):
#
#   perl -e "$list_pl" procs PID
#       the container's processes ("P PID START\0") and the clock
#       ("K TICKS UPTIME NOW\0")
#   perl -e "$list_pl" layer PID SINCE WORKDIR UNWALKED...
#       what the walk of the whole filesystem (find, below) prints, looking
#       only at what can have changed, then the processes: the files the
#       container's writable layer ($INSPECT_LAYER) holds (a file the
#       container created, wrote or changed the mode of is there, with the
#       same change time) and the files mounted into the container that the
#       walk meets (those on the root filesystem's directories), each looked
#       at again in the container's own view, as the walk looks at it (a
#       deleted file's mark in the layer is not there, nor a file a mount
#       hides). It exits 4, having printed nothing, when the layer cannot
#       be read; the caller walks the whole filesystem instead.
list_pl='
use Fcntl qw(:mode);
use Time::HiRes ();
my ($mode, $pid, $since, $wd, @unwalked) = @ARGV;
my $root = "/proc/$pid/root";
sub procs {
	my $ns = readlink("/proc/$pid/ns/pid");
	defined $ns or die "inspect.sh: cannot read the container PID namespace\n";
	my $stats = ns_stats($ns);
	my @out = map { "P $_ $stats->{$_}[20]\0" } keys %$stats;
	open(my $u, "<", "/proc/uptime") or die "inspect.sh: /proc/uptime: $!\n";
	my ($up) = split(" ", scalar <$u>);
	push @out, sprintf("K %d %s %.9f\0", ticks(), $up, Time::HiRes::time());
	return @out;
}
if ($mode eq "procs") {
	print procs();
	exit 0;
}
# find -path patterns: * and ? match any character, / too.
sub pattern {
	my ($p) = @_;
	my $r = "";
	for my $c (split //, $p) {
		$r .= $c eq "*" ? ".*" : $c eq "?" ? "." : quotemeta($c);
	}
	return $r;
}
my @prune = map { pattern($_) } ("/proc", "/sys", "/dev", ($wd =~ s{^/}{}r) ne "" ? ("/" . ($wd =~ s{^/}{}r)) : (),
	map { "/" . ($_ =~ s{^/}{}r) } @unwalked);
my $exact = join("|", @prune);
$exact = qr/^(?:$exact)$/s;
my $under = join("|", @prune);
$under = qr/^(?:$under)(?:\/.*)?$/s;
my $layer = $ENV{INSPECT_LAYER} // "";
exit 4 if $layer eq "";
my @st = Time::HiRes::lstat($layer);
exit 4 unless @st && S_ISDIR($st[2]);
my $dev = $st[0];
my @found;
sub walk {
	my ($rel) = @_;
	opendir(my $d, "$layer$rel") or exit 4;
	for my $e (readdir $d) {
		next if $e eq "." || $e eq "..";
		my $p = "$rel/$e";
		next if $p =~ $exact;
		# Gone since it was listed (a process of the container runs on).
		my @s = Time::HiRes::lstat("$layer$p") or ($!{ENOENT} ? next : exit 4);
		if (S_ISDIR($s[2])) {
			walk($p) if $s[0] == $dev;
		} elsif ($s[10] > $since) {
			push @found, $p;
		}
	}
}
walk("");
open(my $m, "<", "/proc/$pid/mountinfo") or exit 4;
my @mounts;
while (<$m>) {
	my $p = (split / /)[4];
	$p =~ s/\\([0-7]{3})/chr(oct($1))/ge;
	push @mounts, $p if $p ne "/";
}
my $hidden = sub { my ($p) = @_; grep { $_ ne $p && index($p, "$_/") == 0 } @mounts };
my (%seen, @out);
for my $p (@found, @mounts) {
	next if $seen{$p}++ || $hidden->($p) || $p =~ $under;
	my @s = Time::HiRes::lstat("$root$p") or next;
	next if S_ISDIR($s[2]) || $s[10] <= $since;
	my $t = S_ISREG($s[2]) ? "f" : S_ISLNK($s[2]) ? "l" : S_ISCHR($s[2]) ? "c" : S_ISBLK($s[2]) ? "b" : S_ISFIFO($s[2]) ? "p" : S_ISSOCK($s[2]) ? "s" : "U";
	push @out, "$t $p\0";
	last if @out >= 100000;
}
print @out, procs();
'

case "$1" in
list)
	since="$2"
	wd="${3:-}"
	wd="${wd#/}"
	prune=(-path ./proc -o -path ./sys -o -path ./dev)
	[ -n "$wd" ] && prune+=(-o -path "./$wd")
	shift 3 2>/dev/null || shift $#
	for u in "$@"; do prune+=(-o -path "./${u#/}"); done
	perl -e "$ns_pl$list_pl" layer "$pid" "$since" "$wd" "$@" && exit 0
	[ $? = 4 ] || exit 3
	find . -xdev \( "${prune[@]}" \) -prune -o ! -type d -newerct "@$since" -printf '%y /%P\0' | head -z -n 100000
	perl -e "$ns_pl$list_pl" procs "$pid"
	;;
settle)
	# One process, no fork per look: on a loaded machine a look made of
	# shell tools takes longer than the quiet period it measures.
	exec perl -e "$ns_pl"'
use Time::HiRes qw(time sleep);
my ($pid, $quiet, $cpu, $most) = @ARGV;
my $tck = ticks();
my $ns = readlink("/proc/$pid/ns/pid");
defined $ns or die "inspect.sh: cannot read the container'"'"'s PID namespace\n";
# The listening sockets of the container'"'"'s network namespace.
sub listening {
	my @l;
	for my $f (qw(tcp tcp6 udp udp6 unix)) {
		open(my $h, "<", "/proc/$pid/net/$f") or next;
		<$h>;
		while (<$h>) {
			my @x = split;
			if ($f =~ /^tcp/) { push @l, "$f $x[1]" if $x[3] eq "0A" }
			elsif ($f =~ /^udp/) { push @l, "$f $x[1]" }
			elsif ($x[3] eq "00010000") { push @l, "unix " . ($x[7] // $x[6]) }
		}
	}
	return sort @l;
}
# The container'"'"'s processes: PID => "STATE CPU-TICKS COMM".
sub procs {
	my $stats = ns_stats($ns);
	my %p;
	for my $n (keys %$stats) {
		my ($comm, @x) = @{$stats->{$n}};
		$p{$n} = "$x[0] " . ($x[11] + $x[12]) . " $comm";
	}
	return \%p;
}
# CPU time (ms) the processes used, by the ticks /proc/PID/stat counts.
sub used {
	my ($p) = @_;
	my $t = 0;
	$t += (split(" ", $_))[1] for values %$p;
	return $t * 1000 / $tck;
}
my $start = time;
my ($last, $lastp, $lastl, $since) = ("", {}, "", $start);
my $cpu0;
while (1) {
	my $p = procs();
	my $l = join("\n", listening());
	my $cur = join("\n", map { "$_ $p->{$_}" } sort { $a <=> $b } keys %$p) . "\n" . $l;
	my @busy = grep { $p->{$_} =~ /^[RD] / } sort { $a <=> $b } keys %$p;
	my $now = time;
	$cpu0 = used($p) unless defined $cpu0;
	$since = $now if $cur ne $last || @busy;
	my $ms = int(($now - $start) * 1000);
	if (($now - $since) * 1000 >= $quiet) { print "settled $ms\n"; exit 0 }
	if ($ms >= $most || used($p) - $cpu0 >= $cpu) {
		print "unsettled $ms\n";
		my %all = (%$p, %$lastp);
		for my $n (sort { $a <=> $b } keys %all) {
			my ($a, $b) = ($p->{$n} // "", $lastp->{$n} // "");
			next unless $a =~ /^[RD] / || $a ne $b;
			my ($st, $cpu, $comm) = split(" ", $a || $b, 3);
			print "busy $n $comm ", ($a ? $st : "ended"), "\n";
		}
		print "sockets changed\n" if $l ne $lastl;
		exit 0;
	}
	($last, $lastp, $lastl) = ($cur, $p, $l);
	sleep 0.05;
}' "$pid" "$2" "$3" "$4"
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
