package oncegrpc

import (
	"encoding/json"
	"errors"
	"fmt"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/stagedoor/once/internal/wire"
)

// storedReply is what the store keeps for a call: the response message
// (its full protobuf name and its wire bytes), or the final status (its
// google.rpc.Status wire bytes), and the allow-listed metadata the handler
// set (Config.StoreMetadata).
type storedReply struct {
	Type    string
	Message []byte
	Status  []byte // nil for a response message
	Header  metadata.MD
	Trailer metadata.MD
}

var deterministic = proto.MarshalOptions{Deterministic: true}

func replyOf(resp any) (storedReply, error) {
	m, ok := resp.(proto.Message)
	if !ok {
		return storedReply{}, fmt.Errorf("oncegrpc: response %T is not a protobuf message", resp)
	}
	data, err := deterministic.Marshal(m)
	if err != nil {
		return storedReply{}, fmt.Errorf("oncegrpc: marshal response: %w", err)
	}
	return storedReply{Type: string(m.ProtoReflect().Descriptor().FullName()), Message: data}, nil
}

func statusReply(st *status.Status) (storedReply, error) {
	data, err := deterministic.Marshal(st.Proto())
	if err != nil {
		return storedReply{}, fmt.Errorf("oncegrpc: marshal status: %w", err)
	}
	if data == nil {
		data = []byte{} // a status marshals to nothing only when OK; keep it a status
	}
	return storedReply{Status: data}, nil
}

// answer turns a stored reply back into the handler's result: the
// response or the final status error, or decodeErr when the reply cannot
// be decoded (its message type is not linked into this binary, say).
func (r storedReply) answer() (resp any, statusErr, decodeErr error) {
	if r.Status != nil {
		var sp spb.Status
		if err := proto.Unmarshal(r.Status, &sp); err != nil {
			return nil, nil, fmt.Errorf("oncegrpc: stored status: %w", err)
		}
		return nil, status.ErrorProto(&sp), nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(r.Type))
	if err != nil {
		return nil, nil, fmt.Errorf("oncegrpc: stored response type %q: %w", r.Type, err)
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(r.Message, m); err != nil {
		return nil, nil, fmt.Errorf("oncegrpc: stored response: %w", err)
	}
	return m, nil, nil
}

// replyCodec is the once.Codec of the interceptor's calls, pinned on
// their scope whatever the Keeper's codec is. It stores a storedReply in a
// compact binary form, the message or status wire bytes as they are (no
// base64), so the stored size is the message plus its type name and the
// stored metadata:
//
//	format byte | kind byte | string type | md header | md trailer | payload (the rest)
//
// where kind is kindMessage or kindStatus, md is a wire multimap (uvarint
// #keys { string key | uvarint #values | string value… }…, keys sorted),
// and a string is a uvarint length and its bytes.
type replyCodec struct{}

const (
	replyFormat = 1
	kindMessage = 1
	kindStatus  = 2
)

var errNotReply = errors.New("oncegrpc: stored outcome is not a gRPC reply")

// Marshal implements once.Codec for storedReply values. Any other value
// (a step's, see once.Step, in a guarded handler) is stored as JSON.
func (replyCodec) Marshal(v any) ([]byte, error) {
	r, ok := v.(storedReply)
	if !ok {
		return json.Marshal(v)
	}
	kind, payload := byte(kindMessage), r.Message
	if r.Status != nil {
		kind, payload = kindStatus, r.Status
	}
	e := wire.NewEncoder(2 + wire.StringSize(r.Type) + wire.MultimapSize(r.Header) + wire.MultimapSize(r.Trailer) + len(payload))
	e.Byte(replyFormat)
	e.Byte(kind)
	e.String(r.Type)
	e.Multimap(r.Header) // keys sorted: one reply always encodes to the same bytes
	e.Multimap(r.Trailer)
	e.Raw(payload)
	return e.Bytes(), nil
}

// Unmarshal implements once.Codec for *storedReply, and decodes JSON into
// any other value. The decoded payload shares data's memory; it is only
// ever read.
func (replyCodec) Unmarshal(data []byte, v any) error {
	r, ok := v.(*storedReply)
	if !ok {
		return json.Unmarshal(data, v)
	}
	if len(data) < 2 || data[0] != replyFormat || (data[1] != kindMessage && data[1] != kindStatus) {
		return errNotReply
	}
	kind := data[1]
	d := wire.NewDecoder(data[2:])
	typ := d.String()
	header := metadata.MD(d.Multimap())
	trailer := metadata.MD(d.Multimap())
	if d.Err() != nil {
		return errNotReply
	}
	*r = storedReply{Type: typ, Header: header, Trailer: trailer}
	if rest := d.Rest(); kind == kindStatus {
		r.Status = rest[:len(rest):len(rest)]
	} else {
		r.Message = rest
	}
	return nil
}
