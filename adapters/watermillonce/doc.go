// Package watermillonce is a Watermill router middleware that runs each
// message's handler at most once per key with package once: a correct
// replacement for a deduplicator.
//
// Watermill's Deduplicator middleware records a message's key before the
// handler runs, so a message whose handler fails is dropped when it is
// redelivered, and it keeps no outcome, so the messages the handler
// produced are not produced again for a duplicate. This middleware claims
// the key, runs the handler, and records the outcome only when the handler
// succeeded or returned a final error (once.Final): a failed handler's
// message is redelivered and runs again; a duplicate of a handled message
// is acknowledged and its produced messages are returned again, with their
// original UUIDs, so that the router publishes them again (at least once,
// never lost) and their own consumers can deduplicate them by UUID.
//
// The router acts on the handler's result: nil → Ack, an error → Nack
// (redelivery). Middleware answers once.Consume's decisions so:
//
//	once.Ack        → the produced messages (stored ones on a replay), nil
//	once.RetryLater → a *RetryError, after waiting min(RetryAfter,
//	                  Config.MaxRetryDelay): the router nacks
//	once.DeadLetter → a *DeadLetterError: put a poison queue outside this
//	                  middleware, with IsDeadLetter as its filter
//	                  (middleware.PoisonQueueWithFilter), to move the
//	                  message there; without one the router nacks it
package watermillonce
