package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

var replicasScript = script("replicas")

// ReplicaRecord is a replica's record as the store keeps it.
type ReplicaRecord struct {
	Version string `json:"v"`
	Started int64  `json:"s"` // unix ms, the replica's clock
	TTL     int64  `json:"ttl"`
	Offset  int64  `json:"off_us"` // µs
	Table   string `json:"t"`
	Parts   string `json:"tp,omitempty"` // the scheduler's tableParts; absent from older versions
	Jobs    int    `json:"j"`
	Running int    `json:"r"`
}

// Registry modes, replicas.lua's ARGV[1].
const (
	RegistryBeat  = "beat"
	RegistryLeave = "leave"
	RegistryList  = "list"
)

func (s *Redis) RegistryKeys() []string {
	return []string{s.Prefix + ":{replicas}:ids", s.Prefix + ":{replicas}:records"}
}

// Registry runs replicas.lua once and decodes its answer.
func (s *Redis) Registry(ctx context.Context, mode, id string, rec *ReplicaRecord) ([]Replica, error) {
	args := []any{mode, id, "", 0}
	if rec != nil {
		b, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		args[2], args[3] = string(b), rec.TTL
	}
	v, err := replicasScript.Run(ctx, s.c, s.RegistryKeys(), args...).StringSlice()
	if err != nil {
		return nil, err
	}
	return decodeReplicas(v)
}

func decodeReplicas(v []string) ([]Replica, error) {
	if len(v) == 0 || (len(v)-1)%3 != 0 {
		return nil, fmt.Errorf("scheduler: bad replica registry answer (%d fields)", len(v))
	}
	now := MsTime(v[0])
	out := make([]Replica, 0, (len(v)-1)/3)
	for i := 1; i+2 < len(v); i += 3 {
		var rec ReplicaRecord
		if err := json.Unmarshal([]byte(v[i+2]), &rec); err != nil {
			// A record this version cannot read (written by a newer one):
			// list the replica with what is known.
			rec = ReplicaRecord{Version: "?"}
		}
		exp, _ := strconv.ParseInt(v[i+1], 10, 64)
		beat := time.UnixMilli(exp - rec.TTL).UTC()
		r := Replica{
			ID: v[i], Version: rec.Version, LastHeartbeat: beat, HeartbeatAge: max(now.Sub(beat), 0),
			ClockOffset: time.Duration(rec.Offset) * time.Microsecond, Table: rec.Table, Parts: rec.Parts, Jobs: rec.Jobs, Running: rec.Running,
		}
		if rec.Started > 0 {
			r.Started = time.UnixMilli(rec.Started).UTC()
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Replica) int { return cmp.Compare(a.ID, b.ID) })
	markDiffering(out)
	return out, nil
}

// markDiffering flags the replicas whose table is not the one most of them
// have; on a tie for the most common, every replica is flagged.
func markDiffering(rs []Replica) {
	count := map[string]int{}
	for _, r := range rs {
		count[r.Table]++
	}
	if len(count) < 2 {
		return
	}
	best, tie := "", false
	for t, n := range count {
		switch {
		case n > count[best] || best == "":
			best, tie = t, false
		case n == count[best]:
			tie = true
		}
	}
	for i := range rs {
		rs[i].TableDiffers = tie || rs[i].Table != best
	}
}

// Redlock keeps the registry on the first master that answers: it is
// advisory, and needs no quorum.
func (rl *redlock) Registry(ctx context.Context, mode, id string, rec *ReplicaRecord) ([]Replica, error) {
	var errs []error
	for _, m := range rl.masters {
		rs, err := m.Registry(ctx, mode, id, rec)
		if err == nil {
			return rs, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

type Registrar interface {
	Registry(ctx context.Context, mode, id string, rec *ReplicaRecord) ([]Replica, error)
}

var (
	_ Registrar = (*Redis)(nil)
	_ Registrar = (*redlock)(nil)
)
