// Package onceamqp processes RabbitMQ (AMQP 0-9-1) deliveries at most once
// per key with package once, and settles each delivery as consume.Do
// decides:
//
//	consume.Ack        → d.Ack(false)
//	consume.RetryLater → d.Nack(false, true): requeued, after waiting
//	                  the decision's RetryAfter (see Requeues below)
//	consume.DeadLetter → d.Nack(false, false): dropped, or routed to the
//	                  queue's dead-letter exchange (x-dead-letter-exchange)
//	                  when it has one
//
// Process settles every delivery itself: the handler is given a copy of
// the delivery whose Ack, Nack and Reject return ErrSettledByProcess and
// do nothing, since a second acknowledgement of a delivery tag makes
// RabbitMQ close the channel (406, unknown delivery tag).
//
// The key is the message's MessageId property by default, or any header or
// function (Config.Key). A delivery without a usable key is dead-lettered,
// never processed and never a panic. The fingerprint is a digest of the
// routing key and the body, so a key reused with another body is
// dead-lettered too. A panic in Config.Key, Config.Fingerprint or
// Config.OnDecision is recovered: the first two requeue the delivery as
// consume.ReasonMisconfigured (*ConfigPanicError), backed off and never
// dead-lettered, since the service is at fault, not the message; the last
// is ignored.
//
// # Requeues
//
// AMQP has no delayed requeue: a requeued delivery comes back at once. So
// Process waits before it requeues, at most Config.MaxRequeueDelay (5 s by
// default): an in-progress key waits the owner's lease left (a held key
// the hold left); a Hold error the hold (at most consume.HeldRedelivery); a
// store outage consume.StoreRetryAfter doubled per earlier delivery; a
// RetryLater without a hint (a handler error or panic)
// Config.RequeueBackoff doubled per earlier delivery, so that a poison
// message is not requeued at broker speed. The decision's RetryAfter is
// the wait applied.
//
// A shutdown (Process's context cancelled) waits too, but briefly:
// RequeueBackoff (250 ms by default), whatever the delivery count, at
// most MaxRequeueDelay and at most MaxShutdownWait (1 s). A decision
// taken after ctx was cancelled (consume.ReasonCanceled, or any other) waits
// that long before its requeue, and a wait that the cancellation
// interrupts goes on for at most that long more, so that Process returns
// within MaxShutdownWait of it. Requeued at once, a delivery came
// straight back to a consumer still receiving while it shut down (869
// times a second on the local RabbitMQ), each time a delivery that a
// quorum queue counts toward its x-delivery-limit, past which the broker
// dead-letters or drops it;
// oncenats Naks a shutdown after its RetryBackoff for the same reason.
// Cancel the consumer (Channel.Cancel) or close the channel when
// shutting down, so that the broker stops delivering. A context past its
// deadline (a per-message timeout around Process) is no shutdown: the
// core answers consume.ReasonCanceled for it too, but Process backs it off
// by the delivery count, waits all of the wait, and counts it toward
// MaxDeliveries, as a handler error, so that a handler that always
// outlives the timeout is not requeued forever. The wait
// holds the delivery's prefetch slot and the goroutine that called
// Process: a consumer that processes its deliveries one at a time stalls
// behind it, so process them concurrently (one goroutine per delivery,
// bounded by the channel's prefetch) when duplicates or failures are
// common. For long delays use a retry queue with a message TTL.
//
// Every requeue is a delivery: a quorum queue counts it in the
// x-delivery-count header and, past its x-delivery-limit (RabbitMQ 4
// defaults it to 20), dead-letters or drops the message itself, handler
// or no handler. With the default cap, a key another consumer runs costs
// about one requeue per 5 s of its run (6 for a run of one 30 s lease), a
// Hold about one per 5 s of the hold (6 for the default hold of one
// lease; a key held until resolved, one every 5 s forever), a store outage
// about 3 (1 s, 2 s, 4 s) plus one per 5 s of it, and each consumer killed with the
// delivery one. The queue's x-delivery-limit must exceed
// Config.MaxDeliveries plus these; a shorter MaxRequeueDelay multiplies
// them (at 1 s a 30 s lease costs 30, over RabbitMQ 4's default).
//
// Config.MaxDeliveries dead-letters a failing handler's delivery
// (consume.ReasonExhausted) when the delivery's count (Deliveries) is at
// least MaxDeliveries. The count is every delivery, not the handler's
// failures: requeues while in progress, held, the store down or the
// consumer shutting down, and redeliveries after a killed consumer, all
// count, so fewer than MaxDeliveries failures can exhaust it (a shutdown
// itself never does; each one costs a delivery per RequeueBackoff while
// the consumer still receives). Classic queues keep no count: a delivery
// counts 1, or 2 once redelivered, so a MaxDeliveries of 3 or more never fires (a
// poison message is requeued forever) and 2 fires on the first failure of
// any redelivered message, whatever requeued it. Use quorum queues.
//
// A consumer killed mid-message loses its connection, and the broker
// requeues its unacknowledged deliveries at once; the claim in the store
// then decides whether the handler runs again (the killed consumer's lease
// ended), is waited for (in progress) or is replayed (done). For a
// database effect with no window between the effect and its record, use
// ProcessTx.
package onceamqp
