package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/jobs"
)

// Inventory is the service's own business: stock levels, kept in Redis
// through the application's client, and a low-stock index that the reindex
// job rebuilds and every replica serves.
type Inventory struct {
	rdb *redis.Client
}

const (
	stockKey = "inventory:stock"     // hash: SKU -> units in stock
	indexKey = "inventory:low-stock" // hash: body (JSON Index), fence (its token)
	lowStock = 5                     // fewer units than this is low
)

// Index is the low-stock index, with the run that built it.
type Index struct {
	LowStock     []string  `json:"low_stock"`
	RunID        string    `json:"run_id"`
	ScheduledAt  time.Time `json:"scheduled_at"`
	FencingToken int64     `json:"fencing_token"`
	Attempt      int       `json:"attempt"`
	Replica      string    `json:"replica"`
}

// Routes registers the inventory's HTTP API on mux.
func (inv *Inventory) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /stock", func(w http.ResponseWriter, r *http.Request) {
		stock, err := inv.stock(r.Context())
		reply(w, stock, err)
	})
	mux.HandleFunc("POST /stock/{sku}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.FormValue("add"), 10, 64)
		if err != nil {
			http.Error(w, "add=N: "+err.Error(), http.StatusBadRequest)
			return
		}
		units, err := inv.rdb.HIncrBy(r.Context(), stockKey, r.PathValue("sku"), n).Result()
		reply(w, map[string]int64{r.PathValue("sku"): units}, err)
	})
	mux.HandleFunc("GET /low-stock", func(w http.ResponseWriter, r *http.Request) {
		body, err := inv.rdb.HGet(r.Context(), indexKey, "body").Result()
		if errors.Is(err, redis.Nil) {
			http.Error(w, "not indexed yet", http.StatusNotFound)
			return
		}
		reply(w, json.RawMessage(body), err)
	})
}

// Reindex is the "reindex" job. The scheduler calls it on one replica per
// scheduled instant; the context tells it which run this is.
func (inv *Inventory) Reindex(ctx context.Context) error {
	info, _ := jobs.FromContext(ctx) // run id, scheduled instant, fencing token, attempt, replica
	stock, err := inv.stock(ctx)
	if err != nil {
		return err // the attempt fails; the scheduler retries it (retries: 2)
	}
	idx := Index{LowStock: []string{}, RunID: info.RunID, ScheduledAt: info.ScheduledAt,
		FencingToken: info.FencingToken, Attempt: info.Attempt, Replica: info.ReplicaID}
	for sku, units := range stock {
		if units < lowStock {
			idx.LowStock = append(idx.LowStock, sku)
		}
	}
	slices.Sort(idx.LowStock)
	body, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	// Written with the fencing token, so that a run which lost its lease
	// mid-way (paused, cut off) cannot overwrite a newer run's index.
	written, err := fencedWrite.Run(ctx, inv.rdb, []string{indexKey}, info.FencingToken, body).Bool()
	if err != nil {
		return err
	}
	if !written {
		return jobs.Permanent(errors.New("a newer run already wrote the index"))
	}
	jobs.Logger(ctx).Info("low-stock index rebuilt", "skus", len(stock), "low", len(idx.LowStock))
	return nil
}

// stock reads every SKU's units.
func (inv *Inventory) stock(ctx context.Context) (map[string]int64, error) {
	raw, err := inv.rdb.HGetAll(ctx, stockKey).Result()
	stock := make(map[string]int64, len(raw))
	for sku, units := range raw {
		stock[sku], _ = strconv.ParseInt(units, 10, 64)
	}
	return stock, err
}

// fencedWrite stores an index unless one with a higher token is already
// there: the check and the write are one atomic step (see examples/fencing).
var fencedWrite = redis.NewScript(`
if tonumber(ARGV[1]) < tonumber(redis.call('HGET', KEYS[1], 'fence') or '0') then
  return 0
end
redis.call('HSET', KEYS[1], 'fence', ARGV[1], 'body', ARGV[2])
return 1
`)

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
