module github.com/luamcp/luamcp

go 1.26.0

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/gorilla/mux v1.8.1
	github.com/quic-go/quic-go v0.65.0
	github.com/urfave/cli/v2 v2.27.7
	github.com/yuin/gopher-lua v1.1.2
)

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/quic-go/qpack v0.6.0 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
)

replace github.com/yuin/gopher-lua => ./third_party/gopher-lua
