package grpconce

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
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
		return storedReply{}, fmt.Errorf("grpconce: response %T is not a protobuf message", resp)
	}
	data, err := deterministic.Marshal(m)
	if err != nil {
		return storedReply{}, fmt.Errorf("grpconce: marshal response: %w", err)
	}
	return storedReply{Type: string(m.ProtoReflect().Descriptor().FullName()), Message: data}, nil
}

func statusReply(st *status.Status) (storedReply, error) {
	data, err := deterministic.Marshal(st.Proto())
	if err != nil {
		return storedReply{}, fmt.Errorf("grpconce: marshal status: %w", err)
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
			return nil, nil, fmt.Errorf("grpconce: stored status: %w", err)
		}
		return nil, status.ErrorProto(&sp), nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(r.Type))
	if err != nil {
		return nil, nil, fmt.Errorf("grpconce: stored response type %q: %w", r.Type, err)
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(r.Message, m); err != nil {
		return nil, nil, fmt.Errorf("grpconce: stored response: %w", err)
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
// where kind is kindMessage or kindStatus, md is uvarint #keys { string
// key | uvarint #values | string value… }…, and a string is a uvarint
// length and its bytes.
type replyCodec struct{}

const (
	replyFormat = 1
	kindMessage = 1
	kindStatus  = 2
)

var errNotReply = errors.New("grpconce: stored outcome is not a gRPC reply")

// Marshal implements once.Codec for storedReply values.
func (replyCodec) Marshal(v any) ([]byte, error) {
	r, ok := v.(storedReply)
	if !ok {
		return nil, fmt.Errorf("grpconce: cannot encode %T", v)
	}
	kind, payload := byte(kindMessage), r.Message
	if r.Status != nil {
		kind, payload = kindStatus, r.Status
	}
	b := make([]byte, 0, 2+binary.MaxVarintLen64+len(r.Type)+mdSize(r.Header)+mdSize(r.Trailer)+len(payload))
	b = append(b, replyFormat, kind)
	b = appendString(b, r.Type)
	b = appendMD(b, r.Header)
	b = appendMD(b, r.Trailer)
	return append(b, payload...), nil
}

// Unmarshal implements once.Codec for *storedReply. The decoded payload
// shares data's memory; it is only ever read.
func (replyCodec) Unmarshal(data []byte, v any) error {
	r, ok := v.(*storedReply)
	if !ok {
		return fmt.Errorf("grpconce: cannot decode into %T", v)
	}
	if len(data) < 2 || data[0] != replyFormat || (data[1] != kindMessage && data[1] != kindStatus) {
		return errNotReply
	}
	kind := data[1]
	d := decoder{data: data[2:]}
	typ := d.string()
	header := d.md()
	trailer := d.md()
	if d.err != nil {
		return d.err
	}
	*r = storedReply{Type: typ, Header: header, Trailer: trailer}
	if kind == kindStatus {
		r.Status = d.data[:len(d.data):len(d.data)]
	} else {
		r.Message = d.data
	}
	return nil
}

func mdSize(md metadata.MD) int {
	size := binary.MaxVarintLen64
	for k, vals := range md {
		size += binary.MaxVarintLen64*2 + len(k)
		for _, v := range vals {
			size += binary.MaxVarintLen64 + len(v)
		}
	}
	return size
}

// appendMD appends md with its keys sorted, so that one reply always
// encodes to the same bytes.
func appendMD(b []byte, md metadata.MD) []byte {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendString(b, k)
		b = binary.AppendUvarint(b, uint64(len(md[k])))
		for _, v := range md[k] {
			b = appendString(b, v)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads the fields of replyCodec's form; the first error sticks.
type decoder struct {
	data []byte
	err  error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.data)
	if n <= 0 {
		d.err = errNotReply
		return 0
	}
	d.data = d.data[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.data)) {
		d.err = errNotReply
		return ""
	}
	s := string(d.data[:n])
	d.data = d.data[n:]
	return s
}

// md reads a metadata section; nil when it has no key. Every count is
// checked against the bytes left (each entry takes at least one), so a
// corrupt count cannot make it allocate more than the input's size.
func (d *decoder) md() metadata.MD {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.data)) {
		d.err = errNotReply
		return nil
	}
	var md metadata.MD
	if n > 0 {
		md = make(metadata.MD, n)
	}
	for range n {
		k := d.string()
		m := d.uvarint()
		if d.err != nil || m > uint64(len(d.data)) {
			d.err = errNotReply
			return nil
		}
		vals := make([]string, m)
		for i := range vals {
			vals[i] = d.string()
		}
		if d.err != nil {
			return nil
		}
		md[k] = vals
	}
	return md
}
