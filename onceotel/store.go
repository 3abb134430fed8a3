package onceotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/stagedoor/once/backends"
)

// ObserveStore registers gauges read from store on every collection, so
// that held keys are never silently wedged:
//   - once.records (gauge): live records by once.state ("pending", "held",
//     "completed");
//   - once.records.oldest (gauge, s): the age of the oldest pending and
//     held record, by once.state.
//
// Each collection calls store.Count, which reads every record (a table
// scan on PostgreSQL, a SCAN of the keyspace on Redis): collect it at a
// long interval (minutes), or from one process only. A failed Count
// reports nothing for that collection. The returned function unregisters
// the gauges.
func (i *Instrumentation) ObserveStore(store backends.Lister) (unregister func() error, err error) {
	if store == nil {
		return nil, errors.New("onceotel: ObserveStore needs a store")
	}
	records, err1 := i.meter.Int64ObservableGauge("once.records",
		metric.WithDescription("Live records, by state."))
	oldest, err2 := i.meter.Float64ObservableGauge("once.records.oldest", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest pending and held record."))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	state := func(s string) metric.MeasurementOption {
		return metric.WithAttributes(attribute.String("once.state", s))
	}
	reg, err := i.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		c, err := store.Count(ctx)
		if err != nil {
			return err
		}
		o.ObserveInt64(records, c.Pending, state("pending"))
		o.ObserveInt64(records, c.Held, state("held"))
		o.ObserveInt64(records, c.Completed, state("completed"))
		o.ObserveFloat64(oldest, c.OldestPending.Seconds(), state("pending"))
		o.ObserveFloat64(oldest, c.OldestHeld.Seconds(), state("held"))
		return nil
	}, records, oldest)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
