// Package amqponce processes RabbitMQ (AMQP 0-9-1) deliveries at most once
// per key with package once, and settles each delivery as once.Consume
// decides:
//
//	once.Ack        → d.Ack(false)
//	once.RetryLater → d.Nack(false, true): requeued, after waiting
//	                  min(RetryAfter, Config.MaxRequeueDelay)
//	once.DeadLetter → d.Nack(false, false): dropped, or routed to the
//	                  queue's dead-letter exchange (x-dead-letter-exchange)
//	                  when it has one
//
// The key is the message's MessageId property by default, or any header or
// function (Config.Key). A delivery without a usable key is dead-lettered,
// never processed and never a panic. The fingerprint is a digest of the
// routing key and the body, so a key reused with another body is
// dead-lettered too.
//
// AMQP has no delayed requeue: a requeued delivery comes back at once. So
// that an in-progress key does not spin, RetryLater waits the decision's
// hint, capped by MaxRequeueDelay, before it requeues; the wait holds one
// prefetch slot of the channel. A RetryLater without a hint (a handler
// error or panic) waits Config.RequeueBackoff doubled per earlier delivery
// (x-delivery-count on quorum queues; classic queues only flag a
// redelivery), so that a poison message is not requeued at broker speed;
// Config.MaxDeliveries dead-letters a failing handler's delivery
// (once.ReasonExhausted) on its MaxDeliveries-th delivery. For long
// delays use a quorum queue with a delivery-limit and a dead-letter
// exchange, or a retry queue with a message TTL. A consumer killed mid-message loses its
// connection, and the broker requeues its unacknowledged deliveries at
// once; the claim in the store then decides whether the handler runs again
// (the killed consumer's lease ended), is waited for (in progress) or is
// replayed (done). For a database effect with no window between the effect
// and its record, use ProcessTx.
package amqponce
