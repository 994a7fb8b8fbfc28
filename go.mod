module github.com/gomase/gomase

go 1.26.5

require (
	github.com/goccy/go-graphviz v0.2.1
	github.com/gomlx/compute v0.1.2
	github.com/gomlx/gomlx v0.28.2
	github.com/janpfeifer/gonb v0.11.4
	github.com/yuin/goldmark v1.8.7
	golang.org/x/text v0.35.0
)

require (
	github.com/fogleman/gg v1.3.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/gofrs/uuid v4.4.0+incompatible // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/tetratelabs/wazero v1.11.0 // indirect
	golang.org/x/exp v0.0.0-20260410095643-746e56fc9e2f // indirect
	golang.org/x/image v0.26.0 // indirect
	golang.org/x/sys v0.43.0 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
)
