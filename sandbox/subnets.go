package sandbox

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// A trial's network takes a small subnet flightdeck chooses, never one of
// the engine's default address pools whole: Docker's defaults hold 30
// networks (172.17–31.0.0/16 and 192.168.0.0/16 in /20s, one taken by its
// bridge), and a big engine running dozens of multi-container trials at
// once would run out. A /28 holds a task's containers and its gateway
// (13 addresses), and one default pool holds 256 to 4096 of them.

// SubnetBits is the prefix length of a trial network's subnet.
const SubnetBits = 28

// SubnetsEnv names the ranges trial networks are carved from, as CIDRs
// separated by commas or spaces; unset, the engine's default pools.
const SubnetsEnv = "FLIGHTDECK_SUBNETS"

// defaultPools are Docker's default address pools (its
// default-address-pools when the daemon sets none), each a range to carve
// from: the /20s of 192.168.0.0/16 first, from the top, then the /16s of
// 172.17–31 from the top, so that flightdeck's subnets stay in as few of
// the engine's pools as it can.
func defaultPools() []netip.Prefix {
	var out []netip.Prefix
	for i := 15; i >= 0; i-- {
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 168, byte(i * 16), 0}), 20))
	}
	for b := 31; b >= 17; b-- {
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{172, byte(b), 0, 0}), 16))
	}
	return out
}

// ParseSubnets reads a list of IPv4 CIDRs (FLIGHTDECK_SUBNETS, a suite's
// subnets:), each at least a /28.
func ParseSubnets(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		p, err := netip.ParsePrefix(f)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%q is not a CIDR (like 10.90.0.0/20)", f)
		case !p.Addr().Is4():
			return nil, fmt.Errorf("%s: trial networks are IPv4", f)
		case p.Bits() > SubnetBits:
			return nil, fmt.Errorf("%s is smaller than a trial's /%d", f, SubnetBits)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// subnets hands out trial networks' subnets: the first /28 of its ranges
// that no network on the engine uses and, for a local engine, no route of
// the host's covers. One process creates its networks one at a time; a
// subnet another process took meanwhile fails the create, which is tried
// again with another.
type subnets struct {
	mu     sync.Mutex
	ranges []netip.Prefix
	user   bool // the ranges are the user's (SubnetsEnv, a suite's)
	// routes reads the host's routes, nil for a remote engine's host. It
	// is read at each pick: the engine's own bridges come and go with
	// their networks, routes and all.
	routes func() []netip.Prefix
}

// taken are the subnets in use and the host's routes.
func (s *subnets) taken(used []netip.Prefix) []netip.Prefix {
	out := append([]netip.Prefix(nil), used...)
	if s.routes != nil {
		out = append(out, s.routes()...)
	}
	return out
}

// errNoSubnet: every subnet of the ranges is taken.
var errNoSubnet = errors.New("no free subnet")

// pick is the first free /28 of the ranges given those used.
func (s *subnets) pick(used []netip.Prefix) (netip.Prefix, error) {
	taken := s.taken(used)
	for _, r := range s.ranges {
		if !s.user && coversAny(r, taken) {
			// A pool something else holds whole (a network of the
			// engine's default size): leave it be.
			continue
		}
		for p := range carve(r) {
			if !overlapsAny(p, taken) {
				return p, nil
			}
		}
	}
	return netip.Prefix{}, errNoSubnet
}

// Free counts the /28s of the ranges not in use, up to limit.
func (s *subnets) free(used []netip.Prefix, limit int) int {
	taken := s.taken(used)
	n := 0
	for _, r := range s.ranges {
		if !s.user && coversAny(r, taken) {
			continue
		}
		for p := range carve(r) {
			if !overlapsAny(p, taken) {
				if n++; n >= limit {
					return n
				}
			}
		}
	}
	return n
}

// carve yields r's /28s in order.
func carve(r netip.Prefix) func(yield func(netip.Prefix) bool) {
	return func(yield func(netip.Prefix) bool) {
		base := binary.BigEndian.Uint32(r.Addr().AsSlice())
		count := uint32(1) << (SubnetBits - r.Bits())
		step := uint32(1) << (32 - SubnetBits)
		for i := uint32(0); i < count; i++ {
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], base+i*step)
			if !yield(netip.PrefixFrom(netip.AddrFrom4(b), SubnetBits)) {
				return
			}
		}
	}
}

func overlapsAny(p netip.Prefix, set []netip.Prefix) bool {
	for _, q := range set {
		if p.Overlaps(q) {
			return true
		}
	}
	return false
}

// coversAny reports whether a prefix of set holds all of r (a network of a
// whole default pool, the bridge's 172.17.0.0/16).
func coversAny(r netip.Prefix, set []netip.Prefix) bool {
	for _, q := range set {
		if q.Bits() <= r.Bits() && q.Contains(r.Addr()) {
			return true
		}
	}
	return false
}

// hostRoutes are the host's IPv4 routes but the default one
// (/proc/net/route): a subnet there would shadow them for the host.
func hostRoutes() []netip.Prefix {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []netip.Prefix
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 {
			continue
		}
		dst, err1 := hex.DecodeString(fs[1])
		mask, err2 := hex.DecodeString(fs[7])
		if err1 != nil || err2 != nil || len(dst) != 4 || len(mask) != 4 {
			continue
		}
		// Little-endian words.
		d := netip.AddrFrom4([4]byte{dst[3], dst[2], dst[1], dst[0]})
		bits := 0
		for _, b := range mask {
			for ; b != 0; b &= b - 1 {
				bits++
			}
		}
		if bits == 0 {
			continue
		}
		out = append(out, netip.PrefixFrom(d, bits).Masked())
	}
	return out
}

// usedSubnets are the IPv4 subnets of every network on the engine.
func (d *Docker) usedSubnets(ctx context.Context) ([]netip.Prefix, error) {
	list, err := d.api.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return nil, engineErr("list networks", err)
	}
	var out []netip.Prefix
	for _, n := range list.Items {
		for _, c := range n.IPAM.Config {
			if c.Subnet.IsValid() && c.Subnet.Addr().Is4() {
				out = append(out, c.Subnet.Masked())
			}
		}
	}
	return out, nil
}

// subnetWait is how often a trial waiting for a subnet looks again.
const subnetWait = 2 * time.Second

// FreeSubnets counts the trial networks the engine has room for, up to
// limit (the capacity preflight's question).
func (d *Docker) FreeSubnets(ctx context.Context, limit int) (int, error) {
	used, err := d.usedSubnets(ctx)
	if err != nil {
		return 0, err
	}
	return d.subnets.free(used, limit), nil
}

// newSubnets are the ranges given, else FLIGHTDECK_SUBNETS's, else the
// engine's default pools.
func newSubnets(given []netip.Prefix) (*subnets, error) {
	if len(given) > 0 {
		return &subnets{ranges: given, user: true}, nil
	}
	if v := strings.TrimSpace(os.Getenv(SubnetsEnv)); v != "" {
		rs, err := ParseSubnets(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", SubnetsEnv, err)
		}
		return &subnets{ranges: rs, user: true}, nil
	}
	return &subnets{ranges: defaultPools()}, nil
}

// rangesText names the ranges, for a trial that waits.
func (s *subnets) rangesText() string {
	if !s.user {
		return "the engine's default address pools"
	}
	var parts []string
	for _, r := range s.ranges {
		parts = append(parts, r.String())
	}
	return SubnetsEnv + " " + strings.Join(parts, ",")
}

// SubnetCounter is an engine that can say how many trial networks it has
// room for (the capacity preflight's question).
type SubnetCounter interface {
	FreeSubnets(ctx context.Context, limit int) (int, error)
	// SubnetRanges names the ranges trial networks come from.
	SubnetRanges() string
}

var _ SubnetCounter = (*Docker)(nil)

// SubnetRanges names the ranges trial networks come from.
func (d *Docker) SubnetRanges() string { return d.subnets.rangesText() }

// waitingText is what a trial waiting for a subnet says.
func (s *subnets) waitingText() string {
	if s.user {
		return fmt.Sprintf("waiting for a subnet: every /%d of %s is taken; it starts when another trial's network is removed", SubnetBits, s.rangesText())
	}
	return fmt.Sprintf("waiting for a subnet: every /%d of the engine's default address pools is taken; it starts when another trial's network is removed (%s names other ranges)", SubnetBits, SubnetsEnv)
}
