"""neardup.core.items: item mode's pure core (structured records matched field by field)."""
