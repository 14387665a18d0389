package supervisor

// Version is capsule's version. It also keys the compilation cache
// directory, so bump it with any change to the runtimes.
var Version = "0.1.0"
