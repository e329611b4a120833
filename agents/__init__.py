"""Faust agents and the pure logic they run, one capability per subpackage."""
