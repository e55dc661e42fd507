"""The names the fault tests and ``failpoints`` (imported by the worker alone) share."""

POINT_VARIABLE = "COGITATOR_TEST_FAILPOINT"
FOLDER_VARIABLE = "COGITATOR_TEST_FAILPOINT_DIR"
# The points of an extraction job, in the order a job meets them (see failpoints.py).
POINTS = ("claimed", "asking", "writing", "written", "closed")
