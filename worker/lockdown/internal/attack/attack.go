// Package attack holds the few machine-level primitives the lockdown tests
// use to play a guest that escaped wazero, which Go code cannot express.
package attack
