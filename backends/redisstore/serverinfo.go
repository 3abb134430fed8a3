package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// server is one Redis server New inspects: the one of a single-node or
// Sentinel client, or a primary of a Cluster.
type server struct {
	c redis.Cmdable
	// addr is its address, or "" when the client does not say.
	addr string
	// via names the server when addr is unknown, for messages: "the
	// Sentinel primary" for a failover client, or "".
	via string
}

// describe names the server for an error message: "redis at 1.2.3.4:6379",
// "redis (the Sentinel primary)", or name alone.
func describe(name, addr, via string) string {
	switch {
	case addr != "":
		return name + " at " + addr
	case via != "":
		return name + " (" + via + ")"
	}
	return name
}

// failoverAddr is the address go-redis gives the options of a Sentinel
// failover client (redis.NewFailoverClient), whose real address is the
// primary Sentinel names at each dial.
const failoverAddr = "FailoverClient"

// eachServer calls fn for the server of a single-node or Sentinel client,
// and for every primary of a *redis.ClusterClient (concurrently), and returns an error fn
// returned, or the translated error of reaching the nodes. Any other
// redis.UniversalClient is one server of unknown address.
func (s *Store) eachServer(ctx context.Context, op string, fn func(ctx context.Context, sv server) error) error {
	var err error
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return fn(ctx, server{c: n, addr: n.Options().Addr})
		})
	case *redis.Client:
		sv := server{c: c, addr: c.Options().Addr}
		if sv.addr == failoverAddr {
			sv.addr, sv.via = "", "the Sentinel primary"
		}
		return fn(ctx, sv)
	default:
		return fn(ctx, server{c: s.client})
	}
	if err != nil && !ours(err) {
		err = translate(ctx, op, err)
	}
	return err
}

// ours reports whether err is already one of the package's errors.
func ours(err error) bool {
	var e *Error
	var v *ServerVersionError
	var p *EvictionPolicyError
	var m *ClusterModeError
	return errors.As(err, &e) || errors.As(err, &v) || errors.As(err, &p) || errors.As(err, &m)
}

// ClusterModeError reports a server running in cluster mode (INFO
// cluster's cluster_enabled:1) reached through a client that is not a
// *redis.ClusterClient, which New refuses: such a client sends every
// command to the one node it knows, so keys of slots that node does not
// serve fail with MOVED, List and Count would see one node's records, and
// notifications would use PUBLISH where the store's Cluster mode uses
// SPUBLISH. Pass a *redis.ClusterClient (redis.NewClusterClient) instead.
type ClusterModeError struct {
	// Addr is the node's address, when known.
	Addr string
	// Client is the Go type of the client New was given, for example
	// "*redis.Client".
	Client string

	via string // names the node when Addr is unknown
}

// Error implements error.
func (e *ClusterModeError) Error() string {
	return fmt.Sprintf("once/redisstore: %s runs in cluster mode (cluster_enabled:1) but the client is a %s, which sends every command to one node; pass a *redis.ClusterClient (redis.NewClusterClient)",
		describe("redis", e.Addr, e.via), e.Client)
}

// inspect is New's look at the servers: one INFO per server (on every
// primary of a Cluster) carries the sections the version check, the
// cluster mode check and, unless it is EvictionIgnore, the eviction check
// need, and each check reads its fields from that one reply. A server
// that refuses that INFO (see readInfo) is asked each section alone (see
// readSections), so that each check sees what that server shows: an ACL
// user may be allowed INFO memory only (+info|memory), and the eviction
// check then decides on it as CheckEvictionPolicy does.
func (s *Store) inspect(ctx context.Context) error {
	sections := []string{"server", "cluster"}
	if s.check != EvictionIgnore {
		sections = append(sections, "memory")
	}
	_, isCluster := s.client.(*redis.ClusterClient)
	client := fmt.Sprintf("%T", s.client)
	return s.eachServer(ctx, "version check", func(ctx context.Context, sv server) error {
		info, hidden, err := readInfo(ctx, sv.c, sections)
		if err != nil {
			return err
		}
		if hidden != nil {
			// A section the server hides is not in info: the version
			// and mode checks then see no field and pass, and a hidden
			// memory section fails the eviction check on its reply.
			if info, hidden, err = readSections(ctx, sv.c, sections); err != nil {
				return err
			}
		}
		if err := versionCheck(sv, info); err != nil {
			return err
		}
		if v, _ := infoField(info, "cluster_enabled"); v == "1" && !isCluster {
			return &ClusterModeError{Addr: sv.addr, Client: client, via: sv.via}
		}
		if s.check == EvictionIgnore {
			return nil
		}
		if hidden != nil {
			return evictionCheck(ctx, sv, "", hidden)
		}
		return s.evictionVerdict(ctx, evictionCheck(ctx, sv, info, nil))
	})
}

// readSections asks INFO for each of sections alone, in turn, after the
// server refused them together, and returns the replies it gave, joined
// (INFO's sections are each headed by their name, so infoField reads the
// join as one reply). memoryHidden is the error reply to INFO memory when
// the server hides that section, or nil. An error fails New as readInfo's
// do (LOADING, BUSY, an unreachable server). This costs a round trip a
// section, on such servers only.
func readSections(ctx context.Context, c redis.Cmdable, sections []string) (info string, memoryHidden, err error) {
	var b strings.Builder
	for _, section := range sections {
		reply, hidden, err := readInfo(ctx, c, []string{section})
		if err != nil {
			return "", nil, err
		}
		if hidden != nil {
			if section == "memory" {
				memoryHidden = hidden
			}
			continue
		}
		b.WriteString(reply)
		if !strings.HasSuffix(reply, "\n") {
			b.WriteString("\r\n")
		}
	}
	return b.String(), memoryHidden, nil
}

// readInfo sends INFO with sections, which Redis 7.0 and later take in
// one command, and returns its reply. A non-nil hidden is the error reply
// of a server that will not tell (a managed service that disables or
// renames INFO, an ACL user without it, NOPERM, a proxy that takes one
// section at a time): inspect then asks each section alone. The error
// replies that fail New instead:
//
//   - NOAUTH and WRONGPASS (no or wrong credentials) fail it as the
//     server's error (ErrServer): no command would succeed;
//   - LOADING (a server loading its data set) and BUSY (one running a
//     long script) are transient: New fails with ErrUnavailable, and can
//     be called again once the server answers;
//
// and an unreachable server fails it with ErrUnavailable. A server older
// than 7.0 takes one section only and answers several with a syntax
// error: INFO is then sent again without sections (its default sections
// include server, cluster and memory), so that the version check sees
// that server's version.
func readInfo(ctx context.Context, c redis.Cmdable, sections []string) (info string, hidden, err error) {
	const op = "version check"
	info, err = c.Info(ctx, sections...).Result()
	if len(sections) > 1 && isReply(err) && redis.HasErrorPrefix(err, "syntax error") {
		info, err = c.Info(ctx).Result()
	}
	switch {
	case err == nil:
		return info, nil, nil
	case !isReply(err):
		return "", nil, translate(ctx, op, err)
	case redis.HasErrorPrefix(err, "NOAUTH"), redis.HasErrorPrefix(err, "WRONGPASS"):
		return "", nil, translate(ctx, op, err)
	case transient(err):
		return "", nil, newError(ctx, op, err)
	}
	return "", err, nil
}

// transient reports the error replies of a server that will answer
// later: LOADING (loading its data set: real Redis answers INFO then,
// but not SCRIPT LOAD) and BUSY (running a long script).
func transient(err error) bool {
	return redis.HasErrorPrefix(err, "LOADING") || redis.HasErrorPrefix(err, "BUSY")
}

// newError translates an error of New: as translate, but a transient
// error reply is of kind ErrUnavailable, so that New can be called again.
func newError(ctx context.Context, op string, err error) error {
	if isReply(err) && transient(err) {
		return &Error{Op: op, Kind: ErrUnavailable, Detail: err.Error()}
	}
	return translate(ctx, op, err)
}

// isReply reports whether err is an error reply of the server (redis.Nil
// is not one).
func isReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && !errors.Is(err, redis.Nil)
}
