"""Teaching: captions computed from the data, the guide, lessons and named link parameters."""
