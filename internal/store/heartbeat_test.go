package store

import (
	"context"
	"testing"
	"time"
)

func TestLastHeartbeat(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if _, ok, err := db.LastHeartbeat(ctx, "main"); ok || err != nil {
		t.Fatalf("before any: %v %v", ok, err)
	}
	for _, at := range []time.Time{time.UnixMilli(1_800_000_000_000), time.UnixMilli(1_800_000_600_000)} {
		if err := db.SetLastHeartbeat(ctx, "main", at); err != nil {
			t.Fatal(err)
		}
		got, ok, err := db.LastHeartbeat(ctx, "main")
		if !ok || err != nil || !got.Equal(at) {
			t.Errorf("LastHeartbeat = %v %v %v, want %v", got, ok, err, at)
		}
	}
	if _, ok, _ := db.LastHeartbeat(ctx, "ops"); ok {
		t.Error("another agent has the heartbeat of main")
	}
}
