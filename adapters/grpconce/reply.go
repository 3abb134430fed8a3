package grpconce

import (
	"fmt"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// storedReply is what the store keeps for a call: the response message
// (its full protobuf name and its wire bytes), or the final status.
type storedReply struct {
	Type    string `json:"type,omitempty"`
	Message []byte `json:"message,omitempty"`
	Status  []byte `json:"status,omitempty"`
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
