#!/bin/sh
# egress.sh MODE [HOST...] — run as root in a trial's egress gateway, a
# container of flightdeck's own (CAP_NET_ADMIN) whose network namespace the
# task's container joins without that capability: the rules below hold for
# every process of the task's container, and none of them can change them.
#
# MODE public: everything; none: loopback only; allowlist: the HOSTs only
# (hostnames, *.domains, IPv4/IPv6 addresses and CIDRs). Names resolve
# through dnsmasq on 127.0.0.1, which answers NXDOMAIN for every name not
# allowed and adds the addresses of those it resolves to the sets the
# rules accept. Only dnsmasq may ask the engine's resolver.
set -eu
mode="$1"
shift

# The engine's resolver, from the gateway's own resolv.conf (kept the
# first time: the file is rewritten to point at dnsmasq, and the task's
# container shares it).
[ -f /run/fd-resolv.orig ] || cp /etc/resolv.conf /run/fd-resolv.orig
upstream="$(awk '/^nameserver/ { print $2; exit }' /run/fd-resolv.orig)"
[ -n "$upstream" ] || upstream=127.0.0.11
dns_uid="$(id -u dnsmasq)"

nft delete table inet fdegress 2>/dev/null || true
conf=/run/fd-dnsmasq.conf
{
	echo "no-resolv"
	echo "no-hosts"
	echo "listen-address=127.0.0.1"
	echo "bind-interfaces"
	echo "user=dnsmasq"
	echo "pid-file=/run/fd-dnsmasq.pid"
	echo "cache-size=0"
} >"$conf"

case "$mode" in
public)
	echo "server=$upstream" >>"$conf"
	;;
none | allowlist)
	echo "address=/#/" >>"$conf"
	family=ip
	case "$upstream" in *:*) family=ip6 ;; esac
	nft -f - <<EOF
table inet fdegress {
	set a4 { type ipv4_addr; flags interval; }
	set a6 { type ipv6_addr; flags interval; }
	chain out {
		type filter hook output priority 0; policy drop;
		meta skuid $dns_uid $family daddr $upstream accept
		$family daddr $upstream drop
		oifname "lo" accept
		ct state established,related accept
		ip daddr @a4 accept
		ip6 daddr @a6 accept
	}
}
EOF
	;;
*)
	echo "egress.sh: unknown mode $mode" >&2
	exit 2
	;;
esac

if [ "$mode" = allowlist ]; then
	for h in "$@"; do
		case "$h" in
		*/* | *:*)
			case "$h" in *:*) set6="$h" ;; *) set6="" ;; esac
			if [ -n "$set6" ]; then
				nft add element inet fdegress a6 "{ $h }"
			else
				nft add element inet fdegress a4 "{ $h }"
			fi
			;;
		*[!0-9.]*)
			name="${h#\*.}"
			echo "server=/$name/$upstream" >>"$conf"
			echo "nftset=/$name/4#inet#fdegress#a4,6#inet#fdegress#a6" >>"$conf"
			;;
		*)
			nft add element inet fdegress a4 "{ $h }"
			;;
		esac
	done
fi

if [ -f /run/fd-dnsmasq.pid ]; then
	kill "$(cat /run/fd-dnsmasq.pid)" 2>/dev/null || true
	i=0
	while [ -f /run/fd-dnsmasq.pid ] && kill -0 "$(cat /run/fd-dnsmasq.pid)" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	rm -f /run/fd-dnsmasq.pid
fi
dnsmasq --conf-file="$conf"
echo "nameserver 127.0.0.1" >/etc/resolv.conf
