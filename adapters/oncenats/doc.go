// Package oncenats processes NATS JetStream messages at most once per key
// with package once, and acknowledges each message as consume.Do
// decides:
//
//	consume.Ack        → msg.Ack()
//	consume.RetryLater → msg.NakWithDelay(RetryAfter), where RetryAfter is
//	                  the delay Process applies (see Redelivery below)
//	consume.DeadLetter → msg.Term(): JetStream stops delivering the message and
//	                  publishes a MSG_TERMINATED advisory, which a
//	                  dead-letter consumer can follow (Config.TermWithReason
//	                  adds the reason, on nats-server 2.10.4 or later)
//
// The key is, by default (MsgIDKey), the message's stream and its
// Nats-Msg-Id header, the ID JetStream itself deduplicates publishes with:
// "<stream>.<id>", since an ID is unique within one stream only. Any
// header or function can be the key instead (Config.Key). A message
// without a usable key is terminated, never processed and never a panic.
// The fingerprint is a digest of the subject and the payload, so a key
// reused with another payload is terminated too. A panic in Config.Key,
// Config.Fingerprint or Config.OnDecision is recovered: the first two Nak
// the message as consume.ReasonMisconfigured (*ConfigPanicError), backed off
// and never terminated, since the service is at fault, not the message;
// the last is ignored.
//
// # Redelivery
//
// Every Nak is a delivery: JetStream's NumDelivered counts it, and so do
// the consumer's MaxDeliver and Config.MaxDeliveries. Process therefore
// Naks with the delay that spends the fewest deliveries:
//
//   - a key in progress elsewhere (consume.ReasonInProgress): the owner's
//     lease left (up to the scope's lease, 30 s by default), at most
//     Config.MaxRetryBackoff (1 min by default), not the core's one-second
//     hint; a held key: the hold left, at most consume.HeldRedelivery (1 min)
//     and at most Config.MaxRetryBackoff.
//     A message Nak-ed with a delay stays pending until it is redelivered:
//     it counts toward the consumer's MaxAckPending meanwhile (with
//     MaxAckPending 1, nothing else is delivered), so keep MaxAckPending
//     well above the duplicates that may wait at once;
//   - a Hold error (consume.ReasonHeld): the hold (once.WithHoldFor; one
//     lease by default), at most consume.HeldRedelivery;
//   - the store unreachable (consume.ReasonStoreDown): consume.StoreRetryAfter
//     (1 s) doubled per earlier delivery, at most Config.MaxRetryBackoff;
//   - no hint (a handler error or panic, a misconfiguration, a lost lease):
//     Config.RetryBackoff doubled per earlier delivery, at most
//     Config.MaxRetryBackoff, so that a poison message is not redelivered
//     at broker speed;
//   - a consumer shutting down (consume.ReasonCanceled, Process's context
//     cancelled): Config.RetryBackoff (1 s by default), whatever the
//     delivery count, since nothing failed. A context past its deadline (a
//     per-message timeout around Process) is no shutdown: the core answers
//     consume.ReasonCanceled for it too, but Process backs it off and limits
//     it as a handler error, so that a handler that always outlives the
//     timeout is not redelivered every RetryBackoff forever.
//
// Config.MaxDeliveries terminates a message (consume.ReasonExhausted) whose
// handler fails (error or panic) on a delivery whose NumDelivered is at
// least MaxDeliveries. NumDelivered counts every delivery of the message,
// not handler failures: the Naks above (in progress, held, store down,
// shutdown), the redeliveries after AckWait of a message whose consumer
// was killed or stalled, and the failures all count. A message that waited
// in progress for three deliveries is terminated on its handler's first
// failure when MaxDeliveries is 4. A shutdown itself (the handler returns
// the error of the cancelled context) is never terminated; a handler that
// outlives a deadline on Process's context is, as a handler error.
//
// The consumer's MaxDeliver: leave it at -1 (unlimited, JetStream's
// default) and bound a poison message with Config.MaxDeliveries. A message
// whose MaxDeliver runs out is dropped by the server: it is not
// terminated, no MSG_TERMINATED advisory is published (only a
// MAX_DELIVERIES one), and it is never dead-lettered. If you set
// MaxDeliver, it must exceed MaxDeliveries plus every delivery the message
// may spend without a handler failure: one per two thirds to all of a
// lease while another consumer runs the key (the owner renews its lease,
// so a handler running 10 minutes under a 30 s lease costs 20 to 30), one
// per lease after a Hold and one per consume.HeldRedelivery while
// the key is held (a key held until resolved, forever), about
// log2(outage/1s)+outage/MaxRetryBackoff for a store outage, and one per
// consumer killed with the message. No finite MaxDeliver covers a key held
// until resolved or an outage of unknown length.
//
// Redelivery is JetStream's: a consumer killed mid-message leaves it
// unacknowledged, JetStream delivers it again after the consumer's AckWait,
// and the claim in the store decides whether the handler runs again (the
// killed consumer's lease ended), is waited for (in progress: Nak after
// the lease left) or is replayed (done: Ack). For a database effect with
// no window between the effect and its record, use ProcessTx.
package oncenats
