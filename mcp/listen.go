package mcp

import (
	"iter"
	"net/http"
)

// This file serves subscriptions/listen, the 2026-07-28 era's stream of
// server pushes: the list_changed notifications of the route (a script's
// broadcast of one, and hot reloads) and the updates of the resources the
// client named. The stream opens with notifications/subscriptions/acknowledged
// carrying the honoured filter; every message on it carries
// _meta["io.modelcontextprotocol/subscriptionId"], the listen request's id.

// List-changed notifications, which listen streams filter on.
const (
	notifyToolsChanged     = "notifications/tools/list_changed"
	notifyPromptsChanged   = "notifications/prompts/list_changed"
	notifyResourcesChanged = "notifications/resources/list_changed"
	notifyResourceUpdated  = "notifications/resources/updated"
)

// listChangedMethod reports whether method is one of the list_changed
// notifications listen streams carry.
func listChangedMethod(method string) bool {
	switch method {
	case notifyToolsChanged, notifyPromptsChanged, notifyResourcesChanged:
		return true
	}
	return false
}

// listenChannel is the pubsub channel of a route's list_changed pushes,
// which every listen stream of the route joins.
func listenChannel(route string) string { return "l:" + route }

// listenFilter is the honoured part of a listen request's notifications.
type listenFilter struct {
	tools, prompts, resources bool
	uris                      []string // resourceSubscriptions
}

// readListenFilter reads params.notifications, keeping what the server's
// capabilities can honour, and of resourceSubscriptions the first distinct
// URIs within a session's bounds (maxSubscriptions, maxSubscriptionBytes):
// the acknowledgement tells the client which.
func readListenFilter(params []byte, has Capabilities) listenFilter {
	var f listenFilter
	n, _ := member(params, "notifications")
	flag := func(key string) bool {
		v, ok := member(n, key)
		return ok && kindOf(v) == 't'
	}
	f.tools = flag("toolsListChanged")
	f.prompts = has.Prompts && flag("promptsListChanged")
	f.resources = has.Resources && flag("resourcesListChanged")
	if uris, ok := member(n, "resourceSubscriptions"); ok && has.Resources && kindOf(uris) == '[' {
		seen := make(map[string]struct{})
		bytes := 0
		for v := range arrayItems(uris) {
			uri, ok := jsonString(v)
			if !ok {
				continue
			}
			if _, dup := seen[uri]; dup || bytes+len(uri) > maxSubscriptionBytes {
				continue
			}
			if len(f.uris) == maxSubscriptions {
				break
			}
			seen[uri] = struct{}{}
			bytes += len(uri)
			f.uris = append(f.uris, uri)
		}
	}
	return f
}

// appendJSON appends the filter as the acknowledged notifications object.
func (f *listenFilter) appendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	sep := false
	flag := func(key string) {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, key...)
		dst = append(dst, `":true`...)
		sep = true
	}
	if f.tools {
		flag("toolsListChanged")
	}
	if f.prompts {
		flag("promptsListChanged")
	}
	if f.resources {
		flag("resourcesListChanged")
	}
	if len(f.uris) > 0 {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"resourceSubscriptions":[`...)
		for i, uri := range f.uris {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, uri)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// wants reports whether the stream asked for a notification of method.
func (f *listenFilter) wants(method string) bool {
	switch method {
	case notifyToolsChanged:
		return f.tools
	case notifyPromptsChanged:
		return f.prompts
	case notifyResourcesChanged:
		return f.resources
	case notifyResourceUpdated:
		return len(f.uris) > 0 // only its uris' channels reach it
	}
	return false
}

// listener is one listen stream's Subscriber: the pushes it asked for are
// tagged with its subscription id and go to its push stream.
type listener struct {
	id     []byte // the listen request's JSON id
	filter listenFilter
	out    *pushStream
}

// Deliver pushes msg, tagged with the subscription id, when the stream asked
// for its method. It implements Subscriber.
func (l *listener) Deliver(msg []byte) {
	method, _ := stringMember(msg, "method")
	if l.filter.wants(method) {
		l.out.push(l.tag(msg, method))
	}
}

// tag returns the notification msg with _meta.subscriptionId in its params.
func (l *listener) tag(msg []byte, method string) []byte {
	params, _ := member(msg, "params")
	p := make([]byte, 0, len(params)+64)
	p = append(p, `{"_meta":{"`+metaSubscriptionID+`":`...)
	p = append(p, l.id...)
	p = append(p, '}')
	if kindOf(params) == '{' {
		inner := trimSpace(params[1:])
		if len(inner) > 0 && inner[0] != '}' {
			p = append(p, ',')
		}
		p = append(p, inner...)
	} else {
		p = append(p, '}')
	}
	return appendNotification(nil, method, p)
}

// serveListen serves a subscriptions/listen stream until the client closes
// it or the route shuts down; the server then ends it with
// notifications/cancelled and the listen request's result. The stream joins
// the route's broadcast channels named by channels (a fresh state's), and
// gets what the filter wants of what is published there.
func (h *Handler) serveListen(w http.ResponseWriter, r *http.Request, id []byte, f listenFilter, channels []string) {
	l := &listener{id: id, filter: f,
		out: newPushStream(false, h.opts.SessionBufferMax, h.opts.SessionBufferBytes, &h.hub.replay)}
	l.out.dropped = h.evictedPushes()
	// Attached and subscribed before the acknowledgement goes out: nothing
	// pushed after it is missed.
	sent, _, wake := l.out.attach(0, false)
	ps := h.hub.ps
	joined := make([]string, 0, 1+len(l.filter.uris)+len(channels))
	joined = append(joined, listenChannel(h.opts.Path))
	for _, uri := range l.filter.uris {
		joined = append(joined, resourceChannel(h.opts.Path, uri))
	}
	for _, name := range channels {
		joined = append(joined, appChannel(h.opts.Path, name))
	}
	for _, c := range joined {
		ps.Subscribe(c, l)
	}
	defer func() {
		for _, c := range joined {
			ps.Unsubscribe(c, l)
		}
		l.out.close()
	}()

	k := newSink(w, h.opts.WriteTimeout, r.ProtoMajor < 2)
	defer k.close()
	params := append([]byte(`{"notifications":`), nil...)
	params = l.filter.appendJSON(params)
	params = append(params, `,"_meta":{"`+metaSubscriptionID+`":`...)
	params = append(params, l.id...)
	params = append(params, "}}"...)
	if k.sse(appendEvent(nil, "", appendNotification(nil, "notifications/subscriptions/acknowledged", params))) != nil {
		return
	}
	shedHeaders(r)
	tick, stop := h.keepAlive()
	defer stop()
	wt := waiter{wake: wake, tick: tick, gone: r.Context().Done(), ended: h.closing.Done()}
	// A listen stream is lossless or ended: a client that fell behind the
	// ring learns it by the end of its stream, and listens again.
	if writePushes(k, l.out, sent, &wt, true) == waitEnded {
		h.endListen(k, l)
	}
}

// endListen tells the client the server ends its listen stream:
// notifications/cancelled for the listen request, then its result.
func (h *Handler) endListen(k *sink, l *listener) {
	p := append([]byte(`{"requestId":`), l.id...)
	p = append(p, `,"reason":"server shutting down","_meta":{"`+metaSubscriptionID+`":`...)
	p = append(p, l.id...)
	p = append(p, "}}"...)
	res := appendResult(nil, l.id, nil)
	res = res[:len(res)-1]
	res = append(res, `{"resultType":"complete","_meta":{"`+metaSubscriptionID+`":`...)
	res = append(res, l.id...)
	res = append(res, "}}}"...)
	_ = k.sse(appendEvent(nil, "", appendNotification(nil, "notifications/cancelled", p)), appendEvent(nil, "", res))
}

// arrayItems yields the raw items of a raw JSON array, so that a reader
// that stops early does not walk (or hold) the rest of a long one.
func arrayItems(arr []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		i := skipSpace(arr, 1)
		for i < len(arr) && arr[i] != ']' {
			end := skipValue(arr, i)
			if !yield(arr[i:end]) {
				return
			}
			i = skipSpace(arr, end)
			if i < len(arr) && arr[i] == ',' {
				i = skipSpace(arr, i+1)
			}
		}
	}
}
