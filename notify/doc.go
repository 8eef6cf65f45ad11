// Package notify sends Solocron's notifications: one HTTP POST per event
// (a run that failed, timed out, lost its lease or was missed; a job that
// recovered or was paused) to each target a job names.
//
// This package knows HTTP and signatures only. Which replica sends a
// notification, and that it is sent once across the cluster, is the
// scheduler's business: the event is queued in Redis by the same script
// that closes the run, and replicas take deliveries from that queue with a
// lease (see scheduler's doc and docs/monitoring.md).
//
// Every POST carries:
//
//	Content-Type: application/json
//	Solocron-Event: <event>
//	Solocron-Delivery: <run id>:<event>   the idempotency key
//	Solocron-Signature: sha256=<hex>      HMAC-SHA256 of the body, when the target has a secret
//
// A delivery is retried with backoff until the receiver answers 2xx or a
// bounded time passes. A replica that dies while posting may leave the
// receiver with a second POST of the same delivery: receivers de-duplicate
// on Solocron-Delivery.
package notify
