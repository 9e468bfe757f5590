"""Maintenance / inspection report sentences: the shared base (devices, readings, IDs) and English.

Spanish and French share one sentence skeleton in ``corpgen_maint_romance.py``.  A sibling module
of ``generate.py`` (``corpora/`` is not a package).  Every ``rng`` call here is part of the
committed output: keep their order (``generate.py --write-splits --check``).
"""
from __future__ import annotations

import random
from typing import Callable

from corpgen_common import cap, num
from corpgen_maint_tables import DEFECTS, DEVICES, FAMILY_READINGS, LOCATIONS, PARTS, READINGS, TYRES


class Maint:
    """Maintenance / inspection report sentences."""

    def __init__(self, lang: str, rng: random.Random):
        self.lang = lang
        self.r = rng
        self.devices = DEVICES[lang]
        self.templates: list[tuple[int, Callable[[], str]]] = []

    # --- small pieces -------------------------------------------------------
    def n(self, lo, hi, dec):
        return num(self.lang, self.r.uniform(lo, hi), dec)

    def dev(self):
        d = self.r.choice(self.devices)
        return d

    def ident(self):
        r = self.r
        k = r.random()
        if k < 0.45:
            return str(r.randint(1, 12))
        if k < 0.6:
            return r.choice("ABCDEF") + str(r.randint(1, 9))
        if k < 0.75:
            return f"{r.choice('PMCFGT')}{r.randint(100, 999)}"
        return ""

    def devname(self, with_id=True):
        d = self.dev()
        name = d[0]
        if with_id:
            i = self.ident()
            if i:
                name = f"{name} {i}"
        return name, d

    def reading(self, family, exclude=()):
        r = self.r
        keys = [k for k in FAMILY_READINGS[family] if k not in exclude]
        key = r.choice(keys)
        names, units, lo, hi, dec = READINGS[key]
        unit = r.choice(units[self.lang])
        if unit == "psi":
            lo, hi, dec = lo * 14.5, hi * 14.5, 0
        elif unit == "milliohms":
            lo, hi, dec = lo * 10, hi * 10, 0
        elif unit == "cubic meters per hour" or unit == "mètres cubes par heure":
            lo, hi = lo / 16.7, hi / 16.7
        d = dec if r.random() < 0.85 else max(0, dec - 1)
        return key, f"{r.choice(names[self.lang])} {self.n(lo, hi, d)} {unit}"

    def readings(self, family, k):
        used, out = [], []
        for _ in range(min(k, len(FAMILY_READINGS[family]))):
            key, s = self.reading(family, used)
            used.append(key)
            out.append(s)
        return out

    HEAVY = ("Truck", "Bus", "Trailer", "Loader", "Forklift", "Camión", "Autobús", "Remolque", "Carretilla",
             "Camion", "Remorque", "Chariot")

    def tyre(self, vehicle, unit="bar"):
        """Tyre pressure around a per-vehicle-class nominal value."""
        nominal = 8.0 if vehicle in self.HEAVY else 2.5
        v = nominal + self.r.gauss(0, 0.06 * nominal)
        if unit == "psi":
            return num(self.lang, v * 14.5, 0)
        return num(self.lang, v, 1)

    def wo(self):
        r = self.r
        k = r.random()
        if k < 0.5:
            return str(r.randint(10000, 99999))
        if k < 0.8:
            return f"{r.randint(2019, 2025)}-{r.randint(1, 9999):04d}"
        return f"WO-{r.randint(1000, 99999)}"

    def serial(self):
        r = self.r
        k = r.random()
        if k < 0.4:
            return f"{r.choice('ABCDEFGHKMNPRSTXZ')}{r.choice('ABCDEFGHKMNPRSTXZ')}{r.randint(10000, 999999)}"
        if k < 0.7:
            return str(r.randint(1000000, 99999999))
        return f"{r.randint(100, 999)}-{r.randint(1000, 9999)}-{r.choice('ABCDX')}"

    def join(self, items):
        """'a, b and c' in the language."""
        conj = {"en": "and", "es": "y", "fr": "et"}[self.lang]
        if len(items) == 1:
            return items[0]
        if self.r.random() < 0.35:
            return ", ".join(items)
        return ", ".join(items[:-1]) + f" {conj} " + items[-1]

    def sentence(self) -> str:
        raise NotImplementedError


class MaintEN(Maint):
    INSPECT = ["inspected", "checked", "tested", "serviced", "measured", "visually inspected",
               "inspection completed", "checked during the weekly round"]
    OK = ["all values within limits", "no abnormalities found", "condition good", "OK",
          "within tolerance", "no action required", "no leaks found", "running normally"]
    REPLACE = ["Replaced", "Changed", "Installed a new", "Fitted a new", "Swapped the"]
    ACTION = ["replaced", "cleaned", "tightened", "adjusted", "lubricated", "re-greased", "realigned",
              "recalibrated", "topped up", "repaired"]

    def sentence(self):
        r = self.r
        t = r.random()
        if t < 0.22:  # device inspected, readings
            name, d = self.devname()
            rd = self.readings(d[1], r.choice((1, 2, 2, 3, 3, 4)))
            s = f"{cap(name)} {r.choice(self.INSPECT)}, {self.join(rd)}"
            if r.random() < 0.3:
                s += f", {r.choice(self.OK)}"
            return s + "."
        if t < 0.32:  # colon form
            name, d = self.devname()
            rd = self.readings(d[1], r.choice((1, 2, 3)))
            return f"{cap(name)}: {self.join(rd)}."
        if t < 0.42:  # replaced part
            name, d = self.devname()
            part = r.choice(PARTS["en"])
            verb = r.choice(self.REPLACE)
            art = "" if verb.endswith(("new", "the")) else r.choice(("the ", ""))
            s = f"{verb} {art}{part} on {name}"
            k = r.random()
            if k < 0.35:
                s += f", bolts torqued to {r.choice((25, 30, 35, 40, 45, 50, 60, 65, 80, 95, 120, 150, 210, 250))} " \
                     f"{r.choice(('Nm', 'newton meters', 'newton-meters'))}"
            elif k < 0.55:
                s += f", serial number {self.serial()}"
            elif k < 0.7:
                s += f" after {num('en', r.randint(800, 24000), 0)} operating hours"
            return s + "."
        if t < 0.51:  # defect
            name, d = self.devname()
            defect = r.choice(DEFECTS["en"])
            form = r.random()
            if form < 0.4:
                s = f"{cap(defect)} on {name}"
            elif form < 0.7:
                s = f"{cap(name)} shows {defect}"
            else:
                s = f"Found {defect} on {name}"
                if r.random() < 0.5:
                    s += f" in {r.choice(LOCATIONS['en'])}"
            if r.random() < 0.45:
                s += f", {self.reading(d[1])[1]}"
            if r.random() < 0.4:
                s += f". Work order {self.wo()} created"
            elif r.random() < 0.3:
                s += r.choice((". Reported to the shift supervisor", ". Unit taken out of service",
                               ". Repair scheduled for next shutdown", ". Spare part ordered"))
            return s + "."
        if t < 0.58:  # tyres
            unit = r.choice(("bar", "bar", "psi"))
            veh = r.choice(("Truck", "Forklift", "Van", "Trailer", "Vehicle", "Bus", "Loader"))
            k = r.choice((2, 4, 4))
            pos = TYRES["en"][:k] if k == 4 else r.sample(TYRES["en"], 2)
            parts = [f"{p} {self.tyre(veh, unit)} {unit}" for p in pos]
            head = r.choice((f"{veh} {r.randint(1, 40)} tyre pressures", "Tyre pressure", "Tire pressures",
                             f"{veh} {r.randint(1, 40)}, tire pressure"))
            s = f"{head} {self.join(parts)}"
            if r.random() < 0.3:
                s += f", tread depth {self.n(1.6, 12, 1)} millimeters"
            return s + "."
        if t < 0.64:  # batteries / electrical
            k = r.random()
            if k < 0.4:
                s = f"Battery voltage {self.n(11.6, 13.9, 1)} {r.choice(('V', 'volts'))}"
                if r.random() < 0.5:
                    s += f", charging voltage {self.n(13.8, 14.6, 1)} V"
                if r.random() < 0.3:
                    s += f", cold cranking current {r.randint(350, 1100)} A"
            elif k < 0.7:
                ph = r.choice(("L1", "L2", "L3", "phase 1", "phase 2", "phase 3"))
                s = (f"Insulation resistance {ph} to ground {r.randint(5, 2500)} megaohms"
                     f"{r.choice(('', ' at 500 V', ' at 1000 V', ', test voltage 500 V'))}")
            else:
                s = (f"Voltage between L1 and L2 {r.randint(395, 410)} V, L2 and L3 {r.randint(395, 410)} V, "
                     f"L1 and L3 {r.randint(395, 410)} V")
            return s + "."
        if t < 0.71:  # work order
            name, d = self.devname()
            act = r.choice(self.ACTION)
            part = r.choice(PARTS["en"])
            k = r.random()
            if k < 0.5:
                s = f"Work order {self.wo()}, {part} {act} on {name}"
            else:
                s = f"Work order {self.wo()} closed, {name} {r.choice(('back in service', 'released for operation', 'returned to production'))}"
            if r.random() < 0.35:
                s += f", {r.choice(('labor', 'downtime', 'time spent'))} {self.n(0.5, 8, 1)} hours"
            return s + "."
        if t < 0.77:  # torque
            fast = r.choice(("wheel nuts", "cylinder head bolts", "flange bolts", "mounting bolts",
                             "anchor bolts", "terminal screws", "busbar connections", "coupling bolts"))
            val = r.choice((6, 8, 10, 12, 25, 35, 45, 50, 65, 85, 110, 120, 180, 250, 300, 450, 600))
            unit = r.choice(("Nm", "newton meters", "newton-meters"))
            k = r.random()
            if k < 0.5:
                s = f"{cap(fast)} torqued to {val} {unit}"
            elif k < 0.8:
                s = f"Checked torque on {fast}, {val} {unit}"
            else:
                s = f"Retorqued {fast} on {self.devname()[0]} to {val} {unit}"
            if r.random() < 0.3:
                s += r.choice((" in a crosswise pattern", ", marked with torque paint", ", all OK"))
            return s + "."
        if t < 0.82:  # clearance / wear
            part = r.choice(("Brake pad", "Brake lining", "Clutch plate", "Chain", "Rail", "Cutting edge",
                             "Wear plate", "Bushing"))
            q = r.choice(("thickness", "wear", "remaining thickness"))
            s = f"{part} {q} {self.n(1.5, 14, 1)} {r.choice(('millimeters', 'mm'))}"
            if r.random() < 0.6:
                s += f", {r.choice(('minimum', 'limit', 'replacement limit'))} {self.n(1, 4, 1)} millimeters"
            return s + "."
        if t < 0.87:  # hours / due
            name, d = self.devname()
            k = r.random()
            if k < 0.5:
                s = f"{cap(name)} operating hours {num('en', r.randint(100, 60000), 0)}, next service due at {num('en', r.randint(500, 65000) // 250 * 250, 0)}"
            else:
                s = f"Next inspection of {name} due in {r.choice((50, 100, 250, 500, 1000, 2000))} hours"
            return s + "."
        if t < 0.92:  # measured X at location
            name, d = self.devname()
            key, rd = self.reading(d[1])
            s = f"Measured {rd} on {name}"
            if r.random() < 0.5:
                s += f" in {r.choice(LOCATIONS['en'])}"
            if r.random() < 0.4:
                s += f" at {r.randint(6, 22)}:{r.choice(('00', '15', '30', '45', '10', '20', '40', '50'))}"
            return s + "."
        if t < 0.96:  # alarm / limit
            name, d = self.devname()
            key, rd = self.reading(d[1])
            lim = r.choice(("above the alarm limit", "above the warning threshold", "below the minimum",
                            "close to the trip level", "slightly high", "back to normal"))
            return f"{cap(rd)} on {name}, {lim}."
        # firmware / serial / misc
        name, d = self.devname()
        k = r.random()
        if k < 0.5:
            return (f"{cap(name)} firmware updated to version {r.randint(1, 6)}.{r.randint(0, 12)}."
                    f"{r.randint(0, 30)}.")
        if k < 0.75:
            return f"New {name} installed, serial number {self.serial()}."
        return f"{cap(r.choice(self.ACTION))} {r.choice(PARTS['en'])}, {name} tested and OK."
