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
//
// The produced messages are stored as the key's outcome, under the scope's
// outcome cap (once.WithMaxOutcomeSize, once.DefaultMaxOutcomeSize = 1 MiB
// by default; the store must accept that size too). Produced messages whose
// stored form is over the cap could not be republished for a duplicate, so
// they are never handed to the router: the message is dead-lettered
// (once.ReasonTooLarge), on its first run and on every redelivery. Raise the
// cap on the Keeper or Scope for handlers that produce large batches, or
// produce references to the data instead of the data.
package watermillonce
