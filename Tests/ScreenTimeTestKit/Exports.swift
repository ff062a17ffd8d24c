// The kit's users have `.threadsOfTheirOwn` with it.
@_exported public import ScreenTimeTestThreads
