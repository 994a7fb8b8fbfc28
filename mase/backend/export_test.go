package backend

// WithKernels and EmitFunc let the external tests drive the kernel-calling
// graphs with an emitter of their own (there is no GPU to register with).
var (
	WithKernels  = withKernels
	ProbeKernels = probeKernels
)

type EmitFunc = emitFunc
