"""Turning a corpus into a token map: :mod:`.corpus` reads it, :mod:`.style` bridges it, :mod:`.builder` builds."""
