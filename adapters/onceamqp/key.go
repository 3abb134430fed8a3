package onceamqp

import (
	"errors"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/hashers"
)

// ErrMissingKey: the delivery carries no idempotency key. Process
// dead-letters it with consume.ReasonInvalidKey.
var ErrMissingKey = errors.New("onceamqp: message has no idempotency key")

// MessageIDKey returns the delivery's MessageId property; ErrMissingKey
// when it is empty.
func MessageIDKey(d *amqp.Delivery) (string, error) {
	if d.MessageId == "" {
		return "", ErrMissingKey
	}
	return d.MessageId, nil
}

// HeaderKey returns a Config.Key that reads the string header name (a
// business key such as an order ID); ErrMissingKey when it is absent,
// empty or not a string.
func HeaderKey(name string) func(*amqp.Delivery) (string, error) {
	return func(d *amqp.Delivery) (string, error) {
		if v, ok := d.Headers[name].(string); ok && v != "" {
			return v, nil
		}
		return "", ErrMissingKey
	}
}

// BodyFingerprint is a digest of the delivery's routing key and body.
func BodyFingerprint(d *amqp.Delivery) once.Fingerprint {
	return hashers.Parts([]byte(d.RoutingKey), d.Body)
}
