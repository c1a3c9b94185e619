"""The drivers: the protocol a driver implements, the reference driver that really pins memory (mlock,
checked against the kernel), and running a trace on a driver."""
