// Package oncewatermill is a Watermill router middleware that runs each
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
// (redelivery). Middleware answers consume.Do's decisions so:
//
//	consume.Ack        → the produced messages (stored ones on a replay), nil
//	consume.RetryLater → a *RetryError, after waiting: the router nacks
//	consume.DeadLetter → a *DeadLetterError: a poison queue outside this
//	                  middleware moves it; without one the router nacks it
//
// Brokers redeliver a nacked message at once (GoChannel, RabbitMQ through
// watermill-amqp), so the middleware paces failures itself, blocking the
// handler before it returns: a RetryLater with a RetryAfter hint waits the
// hint, at most Config.MaxRetryDelay (1 s by default); one without a hint
// (a handler error or panic) waits Config.RetryBackoff (100 ms by default)
// doubled per consecutive failure of the message in this process, at most
// MaxRetryDelay. A DeadLetter is returned at once the first time the
// message is dead-lettered, whatever RetryLater failures came before; the
// same message dead-lettered again (the router nacked it: no poison queue,
// or its publish failed) waits RetryBackoff doubled per further dead
// letter, at most MaxRetryDelay. The *RetryError's Decision.RetryAfter,
// and the decision given to Config.OnDecision, is the wait applied; a
// *DeadLetterError's Wait is its wait. A message whose context is
// cancelled (a shutdown) is returned without a wait, and a wait ends early
// when it is cancelled; a context past its deadline does not shorten the
// wait, so that a handler that times out on every delivery is paced too.
// A wait holds up the messages behind it on a subscriber that delivers one
// at a time (watermill-amqp), hence the short cap.
//
// Config.MaxDeliveries bounds a poison message: when positive, the
// handler's MaxDeliveries-th failure of a message in this process (a
// retryable error, a panic, or a failure at the deadline of a
// middleware.Timeout placed outside the middleware) and every later one
// are dead-lettered as consume.ReasonExhausted, for the poison queue to move.
// A Watermill message carries no delivery count, so the middleware counts
// the handler's failures itself: unlike onceamqp and oncenats, whose
// broker counts every delivery, the redeliveries of a key in progress or
// held, of a store outage, a misconfiguration, a lost lease or a shutdown
// do not count (an in-progress key waits its owner or the end of its
// lease). The count is per process and per Middleware, reset when the
// message is acknowledged: with several consumers a message may fail
// MaxDeliveries times on each. It defaults to 0, no limit, as in the other
// adapters: a poison message is then redelivered forever, backed off.
//
// Around it:
//
//   - A poison queue, outside this middleware, takes the dead letters:
//     middleware.PoisonQueueWithFilter(pub, topic, IsDeadLetter). Without
//     one a dead letter is redelivered forever, slowly. A plain
//     middleware.PoisonQueue would also take the retryable failures.
//   - middleware.Retry is not needed: a retryable failure is redelivered
//     and backed off. Placed outside this middleware it retries in-process
//     (each retry claims the key again) and also retries dead letters, for
//     nothing; give it a ShouldRetry that refuses IsDeadLetter errors.
//   - middleware.Timeout belongs inside this middleware (added after it,
//     or on the handler), so that it bounds the handler alone; outside,
//     its deadline also runs while the key is claimed and the outcome
//     recorded. Either way a failure at the deadline is backed off.
//   - The middleware may be added to the router (router.AddMiddleware) or
//     to one handler. Its default keys, UUIDKey and MetadataKey, include
//     the handler's name (message.HandlerNameFromCtx), so that handlers
//     sharing one Middleware, and one scope, keep their own outcomes. A
//     Config.Key of your own must keep them apart itself.
//
// The produced messages are stored as the key's outcome, under the scope's
// outcome cap (once.WithMaxOutcomeSize, 1 MiB by default; the store must
// accept that size too). Produced messages whose
// stored form is over the cap could not be republished for a duplicate, so
// they are never handed to the router: the message is dead-lettered
// (consume.ReasonTooLarge), on its first run and on every redelivery. Raise the
// cap on the Keeper or Scope for handlers that produce large batches, or
// produce references to the data instead of the data.
package oncewatermill
