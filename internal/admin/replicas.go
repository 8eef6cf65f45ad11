package admin

import (
	"context"
	"net/http"

	"github.com/solocron/solocron/scheduler"
)

// ReplicaList is the answer of GET /api/v1/replicas.
type ReplicaList struct {
	// Replica is the replica that answered.
	Replica  string              `json:"replica"`
	Replicas []scheduler.Replica `json:"replicas"`
	// TablesDiffer is set when live replicas run different job tables.
	TablesDiffer bool `json:"tables_differ"`
}

func (a *api) listReplicas(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.StoreTimeout)
	defer cancel()
	rs, err := a.cfg.Control.Replicas(ctx)
	if err != nil {
		a.storeError(w, r, err)
		return
	}
	out := ReplicaList{Replica: a.cfg.ReplicaID, Replicas: rs}
	for _, x := range rs {
		out.TablesDiffer = out.TablesDiffer || x.TableDiffers
	}
	if out.Replicas == nil {
		out.Replicas = []scheduler.Replica{}
	}
	writeJSON(w, http.StatusOK, out)
}

// writable refuses actions when the server is read-only.
func (a *api) writable(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.cfg.ReadOnly {
			writeError(w, http.StatusForbidden, "read-only: admin.read_only refuses every action (trigger, pause, resume, backfill, cancel, retry)")
			return
		}
		h(w, r)
	}
}
