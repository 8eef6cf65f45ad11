package scheduler

import "github.com/solocron/solocron/scheduler/internal/store"

// ClaimHead is the number of claim.lua's own arguments, for the external
// tests that tell claim calls apart by their shape.
const ClaimHead = store.ClaimHead

// SetHeldBatchMin sets the least a batch of runs that waited may carry
// (dispatch.go), for a test that shows one instant's worth going out at a
// time with a one-job table; it returns the restore.
func SetHeldBatchMin(n int) (restore func()) {
	old := heldBatchMin
	heldBatchMin = n
	return func() { heldBatchMin = old }
}

// AdmitHash and UndoHash name admit.lua's and undo.lua's EVALSHA calls, for
// the external tests that lose their answers.
var AdmitHash, UndoHash = store.AdmitScript.Hash(), store.UndoScript.Hash()
