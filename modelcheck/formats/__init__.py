"""The file formats modelcheck reads and writes: the trace file (check
--trace-out), ITF and replay's scenarios. A regular package, not a namespace
one: Spark executors import modelcheck from a zip, and zipimport finds no
namespace packages."""
