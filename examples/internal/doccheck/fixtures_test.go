package doccheck

import (
	"slices"
	"strings"
)

// fixture is a stand-in for something a snippet takes as given: a variable
// the reader already has (ctx, pool, k) or a function of theirs (charge).
type fixture struct {
	name    string
	decl    string
	imports []string
}

var fixtures = []fixture{
	{"ctx", "var ctx = context.Background()", []string{"context"}},
	{"pool", "var pool *pgxpool.Pool", []string{"github.com/jackc/pgx/v5/pgxpool"}},
	{"db", "var db *sql.DB", []string{"database/sql"}},
	{"rdb", "var rdb *redis.Client", []string{"github.com/redis/go-redis/v9"}},
	{"store", "var store *postgres.Store", []string{"github.com/stagedoor/once/backends/postgres"}},
	{"k", "var k *once.Keeper", []string{"github.com/stagedoor/once"}},
	{"scope", "var scope once.Scope", []string{"github.com/stagedoor/once"}},
	{"key", `var key = "7f3a9c2e"`, nil},
	{"fp", "var fp once.Fingerprint", []string{"github.com/stagedoor/once"}},
	{"userID", `var userID = "user-42"`, nil},
	{"orderID", `var orderID = "9b1e4d3a"`, nil},
	{"body", "var body []byte", nil},
	{"item", `var item = "espresso beans"`, nil},
	{"addr", `var addr = "127.0.0.1:6379"`, nil},
	{"fn", "var fn func(context.Context) (string, error)", []string{"context"}},
	{"mux", "var mux = http.NewServeMux()", []string{"net/http"}},
	{"placeOrder", "var placeOrder http.Handler", []string{"net/http"}},
	{"charge", "func charge(ctx context.Context, orderID string) (string, error) { return \"\", nil }", []string{"context"}},
	{"holdStock", "func holdStock(ctx context.Context, orderID string) (string, error) { return \"\", nil }", []string{"context"}},
	{"insertOrder", "func insertOrder(ctx context.Context, tx pgx.Tx, orderID, chargeID string) error { return nil }", []string{"context", "github.com/jackc/pgx/v5"}},
	{"newTestStore", "func newTestStore(testing.TB) backends.Store { return nil }", []string{"testing", "github.com/stagedoor/once/backends"}},
	{"lookupCharge", "func lookupCharge(ctx context.Context, key string) (chargeID string, charged bool, err error) { return }", []string{"context"}},
	{"authenticatedUser", "func authenticatedUser(r *http.Request) (string, error) { return \"\", nil }", []string{"net/http"}},
}

// fixtureFile is the file of every fixture but those a snippet declares
// itself at package level.
func fixtureFile(declared []string) string {
	var decls, paths []string
	for _, f := range fixtures {
		if !slices.Contains(declared, f.name) {
			decls = append(decls, f.decl)
			paths = append(paths, f.imports...)
		}
	}
	slices.Sort(paths)
	var s strings.Builder
	s.WriteString("package snippet\n\nimport (\n")
	for _, p := range slices.Compact(paths) {
		s.WriteString("\t\"" + p + "\"\n")
	}
	s.WriteString(")\n\n" + strings.Join(decls, "\n") + "\n")
	return s.String()
}
