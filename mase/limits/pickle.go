package limits

// Bounds on the pickle of a torch.save archive (data.pkl). A state dict's
// pickle holds names and tensor descriptions, about 150 bytes and 30
// opcodes per tensor, a few hundred objects on the stack at once (the
// pickler batches 1000 dict items) and nesting a few levels deep; these
// bounds are orders of magnitude above that and keep what the unpickler
// allocates within a small multiple of MaxPickleBytes.
const (
	// MaxPickleBytes caps data.pkl.
	MaxPickleBytes = 64 << 20
	// MaxPickleOps caps the number of opcodes.
	MaxPickleOps = 1 << 22
	// MaxPickleStack caps the objects on the unpickler's stack at once.
	MaxPickleStack = 1 << 20
	// MaxPickleMarks caps the MARKs open at once (the nesting depth).
	MaxPickleMarks = 1 << 12
	// MaxPickleMemo caps the memo writes (PUT, BINPUT, LONG_BINPUT,
	// MEMOIZE).
	MaxPickleMemo = 1 << 20
	// MaxPickleIntBytes caps one integer: the bytes of LONG4, the digits of
	// LONG (decoding either is quadratic in its length).
	MaxPickleIntBytes = 1 << 10
	// MaxPickleLine caps the line of a text opcode that holds a name or a
	// number (GLOBAL, INST, INT, FLOAT, GET, PUT, PERSID).
	MaxPickleLine = 1 << 10
	// MaxTensorDims caps the dimensions of a tensor read from a checkpoint.
	MaxTensorDims = 64
)
