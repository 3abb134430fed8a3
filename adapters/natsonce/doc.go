// Package natsonce processes NATS JetStream messages at most once per key
// with package once, and acknowledges each message as once.Consume
// decides:
//
//	once.Ack        → msg.Ack()
//	once.RetryLater → msg.NakWithDelay(RetryAfter); without a hint (a
//	                  handler error or panic) the delay is
//	                  Config.RetryBackoff doubled per earlier delivery
//	                  (NumDelivered), at most Config.MaxRetryBackoff, so that
//	                  a poison message is not redelivered at broker speed
//	                  (Config.MaxDeliveries terminates it as
//	                  once.ReasonExhausted after that many deliveries)
//	once.DeadLetter → msg.Term(): JetStream stops delivering the message and
//	                  publishes a MSG_TERMINATED advisory, which a
//	                  dead-letter consumer can follow (Config.TermWithReason
//	                  adds the reason, on nats-server 2.10.4 or later)
//
// The key is the message's Nats-Msg-Id header by default (the header
// JetStream itself deduplicates publishes with), or any header or function
// (Config.Key). A message without a usable key is terminated, never
// processed and never a panic. The fingerprint is a digest of the subject
// and the payload, so a key reused with another payload is terminated too.
//
// Redelivery is JetStream's: a consumer killed mid-message leaves it
// unacknowledged, JetStream delivers it again after the consumer's AckWait,
// and the claim in the store decides whether the handler runs again (the
// killed consumer's lease ended), is waited for (in progress: Nak with the
// lease hint) or is replayed (done: Ack). Give the consumer a MaxDeliver
// above Config.MaxDeliveries as a backstop: past MaxDeliver JetStream stops
// delivering a message without terminating it (a MAX_DELIVERIES
// advisory). For a database effect with no
// window between the effect and its record, run the handler in a
// PostgreSQL transaction and settle yourself (see ExampleSettle).
package natsonce
