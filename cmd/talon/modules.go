package main

// The plugins and sandbox backends this binary ships: each registers
// itself when imported, and internal/standard imports the set.
import _ "talon/internal/standard"
