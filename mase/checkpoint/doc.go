// Package checkpoint saves and loads gomase models and MaseGraphs.
//
// Parameters are stored in the safetensors format (package safetensors; the
// format HuggingFace uses for model.safetensors), under their HuggingFace
// names, so a checkpoint written here can be read by HF tools and a HF
// checkpoint of the same architecture can be loaded here (SaveModel,
// LoadModel). A MaseGraph is exported as two files, <base>.safetensors and
// <base>.json (Export, Import), the counterpart of MASE's mg.export /
// MaseGraph.from_checkpoint.
//
// A file is read whole and validated before any value is used: the loaders
// never leave a model half loaded. A MaseGraph's graph file is sealed with
// a SHA-256 of its own bytes and records the parameters file's, so Import
// refuses a corrupted or edited pair; whatever the checksum says, Import
// validates every size, node, target and argument before using them. Every file is written atomically
// (temporary file in the same directory, fsync, rename).
package checkpoint
