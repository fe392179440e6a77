package sandbox

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func prefixes(t *testing.T, ss ...string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// The first free /28 of the ranges: past those in use (the engine's and
// the host's routes), never in a default pool another network holds whole,
// and none when all are taken.
func TestSubnetsPick(t *testing.T) {
	tests := []struct {
		name  string
		s     *subnets
		used  []string
		want  string // "" : none
		nFree int
		limit int
	}{
		{"the top default pool first", &subnets{ranges: defaultPools()}, nil, "192.168.240.0/28", 5, 5},
		{"past our own", &subnets{ranges: defaultPools()}, []string{"192.168.240.0/28", "192.168.240.16/28"}, "192.168.240.32/28", 3, 3},
		{"a pool held whole is left be", &subnets{ranges: defaultPools()}, []string{"192.168.240.0/20"}, "192.168.224.0/28", 2, 2},
		{"the host's routes are taken", &subnets{ranges: defaultPools(), routes: func() []netip.Prefix { return prefixes(t, "192.168.240.0/21") }}, nil, "192.168.248.0/28", 1, 1},
		{"a user's range is carved even where it overlaps", &subnets{ranges: prefixes(t, "10.9.0.0/26"), user: true}, []string{"10.9.0.0/27"}, "10.9.0.32/28", 2, 10},
		{"a full user's range has none", &subnets{ranges: prefixes(t, "10.9.0.0/28"), user: true}, []string{"10.9.0.0/28"}, "", 0, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			used := prefixes(t, tt.used...)
			got, err := tt.s.pick(used)
			if tt.want == "" {
				assert.ErrorIs(t, err, errNoSubnet)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got.String())
			}
			assert.Equal(t, tt.nFree, tt.s.free(used, tt.limit))
		})
	}
	// Every default pool taken whole (the 31st network of a default
	// engine fails): none of them.
	all := subnets{ranges: defaultPools()}
	_, err := all.pick(defaultPools())
	assert.ErrorIs(t, err, errNoSubnet)
}

func TestParseSubnets(t *testing.T) {
	got, err := ParseSubnets("10.90.0.0/20, 10.91.0.5/24")
	require.NoError(t, err)
	assert.Equal(t, prefixes(t, "10.90.0.0/20", "10.91.0.0/24"), got)
	for in, want := range map[string]string{
		"nope":        `"nope" is not a CIDR`,
		"fd00::/64":   "trial networks are IPv4",
		"10.0.0.0/29": "smaller than a trial's /28",
	} {
		_, err := ParseSubnets(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want)
	}
}

// carve counts a range's /28s.
func TestCarve(t *testing.T) {
	n := 0
	for p := range carve(netip.MustParsePrefix("10.0.0.0/24")) {
		assert.Equal(t, SubnetBits, p.Bits())
		n++
	}
	assert.Equal(t, 16, n)
}
