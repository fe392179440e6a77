package results

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMissingShardsText(t *testing.T) {
	rec := &RunRecord{Shards: []string{"1/3 a", "3/3 c"}, MissingShards: []int{2}}
	assert.Equal(t, "shard 2 of 3 is missing", MissingShardsText(rec))
	rec = &RunRecord{Shards: []string{"1/4 a"}, MissingShards: []int{2, 3}}
	assert.Equal(t, "shards 2, 3 of 4 are missing", MissingShardsText(rec))
}
