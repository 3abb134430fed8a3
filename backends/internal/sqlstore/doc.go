// Package sqlstore is the skeleton the SQL stores (postgres, mysqlstore,
// sqlitestore) share: their embedded migrations, their sweeper loop and
// their conversions between durations and the whole microseconds they
// store. It holds no SQL; each store keeps its dialect.
package sqlstore
