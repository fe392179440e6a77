package sandbox

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlightRunsOncePerKey(t *testing.T) {
	var f flight[int]
	var calls atomic.Int32
	release := make(chan struct{})
	fn := func(context.Context) (int, error) {
		calls.Add(1)
		<-release
		return 7, nil
	}
	var wg sync.WaitGroup
	results := make([]int, 8)
	shared := make([]bool, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, s, err := f.do(context.Background(), "k", fn)
			assert.NoError(t, err)
			results[i], shared[i] = v, s
		}()
	}
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		c := f.calls["k"]
		return c != nil && c.waiters == 8
	}, 30*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	assert.Equal(t, int32(1), calls.Load())
	leaders := 0
	for i := range results {
		assert.Equal(t, 7, results[i])
		if !shared[i] {
			leaders++
		}
	}
	assert.Equal(t, 1, leaders)
}

func TestFlightSurvivesOneCancelledCaller(t *testing.T) {
	var f flight[int]
	release := make(chan struct{})
	var sawCancel atomic.Bool
	fn := func(ctx context.Context) (int, error) {
		select {
		case <-release:
			return 1, nil
		case <-ctx.Done():
			sawCancel.Store(true)
			return 0, ctx.Err()
		}
	}
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() {
		_, _, err := f.do(leaderCtx, "k", fn)
		leaderDone <- err
	}()
	require.Eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.calls["k"] != nil }, 10*time.Second, time.Millisecond)
	followerDone := make(chan int, 1)
	go func() {
		v, _, _ := f.do(context.Background(), "k", fn)
		followerDone <- v
	}()
	require.Eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.calls["k"].waiters == 2 }, 10*time.Second, time.Millisecond)
	cancelLeader()
	assert.ErrorIs(t, <-leaderDone, context.Canceled)
	close(release)
	assert.Equal(t, 1, <-followerDone)
	assert.False(t, sawCancel.Load(), "the call goes on while someone waits")
}

func TestFlightCancelsWhenEveryoneLeaves(t *testing.T) {
	var f flight[int]
	stopped := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _, _ = f.do(ctx, "k", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			close(stopped)
			return 0, ctx.Err()
		})
	}()
	require.Eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.calls["k"] != nil }, 10*time.Second, time.Millisecond)
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the call was not cancelled when its only caller left")
	}
}
