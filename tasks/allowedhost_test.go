package tasks

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckAllowedHost(t *testing.T) {
	tests := []struct {
		host string
		ok   bool
	}{
		{"pypi.org", true},
		{"*.pythonhosted.org", true},
		{"allowed-host", true},
		{"10.0.0.5", true},
		{"10.0.0.0/8", true},
		{"2001:db8::1", true},
		{"2001:db8::/32", true},
		{"files example com", false},
		{"a*b.org", false},
		{"*.", false},
		{"", false},
		{"-bad.org", false},
		{"x..org", false},
	}
	for _, tc := range tests {
		err := checkAllowedHost(tc.host)
		if tc.ok {
			assert.NoError(t, err, tc.host)
		} else {
			assert.Error(t, err, tc.host)
		}
	}
}
