#!/usr/bin/env python3
"""Template generator for the synthetic tokenmap domain corpora.

Pure standard library, deterministic for a given seed.

Domains (generated): ``maintenance`` and ``incar``, languages ``en``, ``es``,
``fr``.  Output is written the way Whisper transcribes: sentence case, final
punctuation, digits for numbers, unit symbols or unit words as Whisper tends to
write them ("142.5 bar", "22 degrees", "12 V", "at 10:30"; "142,5 bar" in es/fr).

Usage::

    python corpora/generate.py maintenance --lang en -n 1000000 --seed 7 > big.txt
    python corpora/generate.py --write-splits            # regenerate committed files
    python corpora/generate.py --write-splits --check    # verify they are identical

Library use (the file is not a package; load it by path)::

    import importlib.util
    spec = importlib.util.spec_from_file_location("corpgen", "corpora/generate.py")
    corpgen = importlib.util.module_from_spec(spec); spec.loader.exec_module(corpgen)
    for line in corpgen.generate("incar", "en", 10, seed=1): print(line)
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sys
from typing import Callable, Iterator

DOMAINS = ("maintenance", "incar")
LANGS = ("en", "es", "fr")

# Committed splits: sizes and seeds. Changing these changes the committed files.
SPLIT_TRAIN_N = 20000
SPLIT_TEST_N = 200
SPLIT_TRAIN_SEED = 1
SPLIT_TEST_SEED = 2
WRITTEN_N = 3000
WRITTEN_SEED = 3


# --------------------------------------------------------------------------
# number helpers
# --------------------------------------------------------------------------

def _num(lang: str, x: float, dec: int) -> str:
    """Digits as Whisper writes them: '142.5' (en) / '142,5' (es, fr)."""
    if dec <= 0:
        v = int(round(x))
        if lang == "en" and abs(v) >= 1000:
            return f"{v:,}"
        return str(v)
    s = f"{x:.{dec}f}"
    return s.replace(".", ",") if lang != "en" else s


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:] if s else s


# A reading is (name-variants per language, unit-variants per language, lo, hi, decimals).
# Unit variants list both symbol and word forms, since Whisper emits both.
READINGS = {
    "outlet_pressure": ({"en": ["outlet pressure", "discharge pressure"],
                         "es": ["presión de salida", "presión de descarga"],
                         "fr": ["pression de sortie", "pression de refoulement"]},
                        {"en": ["bar"], "es": ["bar", "bares"], "fr": ["bar", "bars"]}, 80, 220, 1),
    "inlet_pressure": ({"en": ["inlet pressure", "suction pressure"],
                        "es": ["presión de entrada", "presión de aspiración"],
                        "fr": ["pression d'entrée", "pression d'aspiration"]},
                       {"en": ["bar"], "es": ["bar"], "fr": ["bar"]}, 0.5, 9, 1),
    "oil_pressure": ({"en": ["oil pressure"], "es": ["presión de aceite"], "fr": ["pression d'huile"]},
                     {"en": ["bar", "psi"], "es": ["bar"], "fr": ["bar"]}, 1.5, 6.5, 1),
    "temperature": ({"en": ["temperature", "housing temperature", "bearing temperature"],
                     "es": ["temperatura", "temperatura de la carcasa", "temperatura del rodamiento"],
                     "fr": ["température", "température du carter", "température du roulement"]},
                    {"en": ["°C", "degrees", "degrees Celsius"], "es": ["°C", "grados", "grados centígrados"],
                     "fr": ["°C", "degrés", "degrés Celsius"]}, 18, 96, 0),
    "oil_temperature": ({"en": ["oil temperature"], "es": ["temperatura del aceite"],
                         "fr": ["température d'huile"]},
                        {"en": ["°C", "degrees"], "es": ["°C", "grados"], "fr": ["°C", "degrés"]}, 35, 110, 0),
    "coolant_temperature": ({"en": ["coolant temperature"], "es": ["temperatura del refrigerante"],
                             "fr": ["température du liquide de refroidissement"]},
                            {"en": ["°C", "degrees"], "es": ["°C", "grados"], "fr": ["°C", "degrés"]}, 70, 105, 0),
    "vibration": ({"en": ["vibration", "vibration velocity"], "es": ["vibración", "velocidad de vibración"],
                   "fr": ["vibration", "vitesse vibratoire"]},
                  {"en": ["mm/s", "millimeters per second"], "es": ["mm/s", "milímetros por segundo"],
                   "fr": ["mm/s", "millimètres par seconde"]}, 0.4, 14, 1),
    "current": ({"en": ["current", "motor current", "phase current"],
                 "es": ["corriente", "corriente del motor", "corriente de fase"],
                 "fr": ["courant", "courant moteur", "courant de phase"]},
                {"en": ["A", "amps", "amperes"], "es": ["A", "amperios"], "fr": ["A", "ampères"]}, 1.5, 125, 1),
    "supply_voltage": ({"en": ["supply voltage", "line voltage"], "es": ["tensión de alimentación", "tensión de línea"],
                        "fr": ["tension d'alimentation", "tension de ligne"]},
                       {"en": ["V", "volts"], "es": ["V", "voltios"], "fr": ["V", "volts"]}, 385, 415, 0),
    "battery_voltage": ({"en": ["battery voltage"], "es": ["tensión de la batería", "voltaje de batería"],
                         "fr": ["tension batterie", "tension de la batterie"]},
                        {"en": ["V", "volts"], "es": ["V", "voltios"], "fr": ["V", "volts"]}, 11.6, 14.4, 1),
    "speed": ({"en": ["speed", "shaft speed"], "es": ["velocidad", "velocidad del eje"],
               "fr": ["vitesse", "vitesse de l'arbre"]},
              {"en": ["rpm", "RPM"], "es": ["rpm"], "fr": ["tr/min", "tours par minute"]}, 700, 3600, 0),
    "flow": ({"en": ["flow rate", "flow"], "es": ["caudal"], "fr": ["débit"]},
             {"en": ["liters per minute", "l/min", "cubic meters per hour"], "es": ["litros por minuto", "l/min"],
              "fr": ["litres par minute", "l/min", "mètres cubes par heure"]}, 8, 260, 1),
    "insulation": ({"en": ["insulation resistance"], "es": ["resistencia de aislamiento"],
                    "fr": ["résistance d'isolement"]},
                   {"en": ["megaohms", "MΩ"], "es": ["megaohmios", "MΩ"], "fr": ["mégohms", "MΩ"]}, 5, 2500, 0),
    "frequency": ({"en": ["frequency"], "es": ["frecuencia"], "fr": ["fréquence"]},
                  {"en": ["Hz", "hertz"], "es": ["Hz", "hercios"], "fr": ["Hz", "hertz"]}, 49.7, 50.3, 2),
    "power": ({"en": ["power", "active power"], "es": ["potencia", "potencia activa"],
               "fr": ["puissance", "puissance active"]},
              {"en": ["kW", "kilowatts"], "es": ["kW", "kilovatios"], "fr": ["kW", "kilowatts"]}, 0.8, 450, 1),
    "noise": ({"en": ["noise level", "sound level"], "es": ["nivel de ruido"], "fr": ["niveau sonore"]},
              {"en": ["dB", "decibels"], "es": ["dB", "decibelios"], "fr": ["dB", "décibels"]}, 62, 98, 0),
    "oil_level": ({"en": ["oil level", "tank level", "fill level"], "es": ["nivel de aceite", "nivel del depósito"],
                   "fr": ["niveau d'huile", "niveau du réservoir"]},
                  {"en": ["%", "percent"], "es": ["%", "por ciento"], "fr": ["%", "pour cent"]}, 20, 100, 0),
    "humidity": ({"en": ["relative humidity", "humidity"], "es": ["humedad relativa"], "fr": ["humidité relative"]},
                 {"en": ["%", "percent"], "es": ["%"], "fr": ["%"]}, 25, 90, 0),
    "thickness": ({"en": ["pad thickness", "wall thickness", "lining thickness"],
                   "es": ["espesor de la pastilla", "espesor de pared", "espesor del forro"],
                   "fr": ["épaisseur de plaquette", "épaisseur de paroi", "épaisseur de garniture"]},
                  {"en": ["millimeters", "mm"], "es": ["milímetros", "mm"], "fr": ["millimètres", "mm"]}, 1.5, 14, 1),
    "clearance": ({"en": ["clearance", "gap", "axial play"], "es": ["holgura", "juego axial"],
                   "fr": ["jeu", "jeu axial"]},
                  {"en": ["millimeters", "mm"], "es": ["milímetros", "mm"], "fr": ["millimètres", "mm"]}, 0.02, 0.8, 2),
    "resistance": ({"en": ["winding resistance", "contact resistance"],
                    "es": ["resistencia del devanado", "resistencia de contacto"],
                    "fr": ["résistance d'enroulement", "résistance de contact"]},
                   {"en": ["ohms", "Ω", "milliohms"], "es": ["ohmios", "miliohmios"], "fr": ["ohms", "milliohms"]},
                   0.1, 48, 2),
}

# Which readings make sense for which device family.
FAMILY_READINGS = {
    "hydraulic": ["outlet_pressure", "inlet_pressure", "temperature", "oil_temperature", "flow", "oil_level",
                  "vibration", "noise"],
    "rotating": ["vibration", "temperature", "current", "speed", "noise", "oil_temperature", "power",
                 "clearance"],
    "electrical": ["supply_voltage", "current", "insulation", "frequency", "power", "temperature",
                   "resistance"],
    "engine": ["oil_pressure", "oil_temperature", "coolant_temperature", "speed", "battery_voltage", "oil_level"],
    "hvac": ["temperature", "humidity", "flow", "current", "outlet_pressure", "noise"],
    "brake": ["thickness", "temperature", "clearance"],
}

DEVICES = {
    "en": [
        ("hydraulic pump", "hydraulic"), ("hydraulic power unit", "hydraulic"), ("hydraulic cylinder", "hydraulic"),
        ("pressure relief valve", "hydraulic"), ("accumulator", "hydraulic"), ("feed pump", "hydraulic"),
        ("coolant pump", "hydraulic"), ("gear pump", "hydraulic"),
        ("compressor", "rotating"), ("screw compressor", "rotating"), ("cooling fan", "rotating"),
        ("gearbox", "rotating"), ("main bearing", "rotating"), ("conveyor drive", "rotating"),
        ("electric motor", "rotating"), ("drive motor", "rotating"), ("exhaust fan", "rotating"),
        ("spindle", "rotating"), ("centrifugal pump", "rotating"), ("blower", "rotating"),
        ("transformer", "electrical"), ("circuit breaker", "electrical"), ("switchgear panel", "electrical"),
        ("frequency converter", "electrical"), ("inverter", "electrical"), ("UPS", "electrical"),
        ("distribution board", "electrical"), ("generator", "electrical"), ("battery charger", "electrical"),
        ("diesel engine", "engine"), ("auxiliary engine", "engine"), ("forklift", "engine"),
        ("emergency generator", "engine"), ("truck", "engine"), ("excavator", "engine"),
        ("air handling unit", "hvac"), ("chiller", "hvac"), ("cooling tower", "hvac"), ("heat exchanger", "hvac"),
        ("rooftop unit", "hvac"), ("boiler", "hvac"),
        ("brake disc", "brake"), ("brake caliper", "brake"), ("rear axle brake", "brake"), ("crane hoist brake", "brake"),
    ],
    "es": [
        ("bomba hidráulica", "hydraulic", "f"), ("grupo hidráulico", "hydraulic", "m"),
        ("cilindro hidráulico", "hydraulic", "m"), ("válvula de alivio", "hydraulic", "f"),
        ("acumulador", "hydraulic", "m"), ("bomba de alimentación", "hydraulic", "f"),
        ("bomba de refrigerante", "hydraulic", "f"), ("bomba de engranajes", "hydraulic", "f"),
        ("compresor", "rotating", "m"), ("compresor de tornillo", "rotating", "m"),
        ("ventilador de refrigeración", "rotating", "m"), ("reductor", "rotating", "m"),
        ("rodamiento principal", "rotating", "m"), ("accionamiento de la cinta", "rotating", "m"),
        ("motor eléctrico", "rotating", "m"), ("motor de accionamiento", "rotating", "m"),
        ("extractor", "rotating", "m"), ("husillo", "rotating", "m"), ("bomba centrífuga", "rotating", "f"),
        ("soplante", "rotating", "f"),
        ("transformador", "electrical", "m"), ("interruptor automático", "electrical", "m"),
        ("cuadro eléctrico", "electrical", "m"), ("variador de frecuencia", "electrical", "m"),
        ("inversor", "electrical", "m"), ("SAI", "electrical", "m"), ("generador", "electrical", "m"),
        ("cargador de baterías", "electrical", "m"),
        ("motor diésel", "engine", "m"), ("motor auxiliar", "engine", "m"), ("carretilla elevadora", "engine", "f"),
        ("grupo electrógeno", "engine", "m"), ("camión", "engine", "m"), ("excavadora", "engine", "f"),
        ("climatizador", "hvac", "m"), ("enfriadora", "hvac", "f"), ("torre de refrigeración", "hvac", "f"),
        ("intercambiador de calor", "hvac", "m"), ("caldera", "hvac", "f"),
        ("disco de freno", "brake", "m"), ("pinza de freno", "brake", "f"), ("freno del eje trasero", "brake", "m"),
        ("freno del polipasto", "brake", "m"),
    ],
    "fr": [
        ("pompe hydraulique", "hydraulic", "f"), ("centrale hydraulique", "hydraulic", "f"),
        ("vérin hydraulique", "hydraulic", "m"), ("soupape de sûreté", "hydraulic", "f"),
        ("accumulateur", "hydraulic", "m"), ("pompe d'alimentation", "hydraulic", "f"),
        ("pompe de refroidissement", "hydraulic", "f"), ("pompe à engrenages", "hydraulic", "f"),
        ("compresseur", "rotating", "m"), ("compresseur à vis", "rotating", "m"),
        ("ventilateur de refroidissement", "rotating", "m"), ("réducteur", "rotating", "m"),
        ("palier principal", "rotating", "m"), ("entraînement du convoyeur", "rotating", "m"),
        ("moteur électrique", "rotating", "m"), ("moteur d'entraînement", "rotating", "m"),
        ("extracteur", "rotating", "m"), ("broche", "rotating", "f"), ("pompe centrifuge", "rotating", "f"),
        ("soufflante", "rotating", "f"),
        ("transformateur", "electrical", "m"), ("disjoncteur", "electrical", "m"),
        ("tableau électrique", "electrical", "m"), ("variateur de fréquence", "electrical", "m"),
        ("onduleur", "electrical", "m"), ("groupe électrogène", "engine", "m"), ("chargeur de batterie", "electrical", "m"),
        ("alternateur", "electrical", "m"),
        ("moteur diesel", "engine", "m"), ("moteur auxiliaire", "engine", "m"), ("chariot élévateur", "engine", "m"),
        ("camion", "engine", "m"), ("pelleteuse", "engine", "f"),
        ("centrale de traitement d'air", "hvac", "f"), ("groupe froid", "hvac", "m"),
        ("tour de refroidissement", "hvac", "f"), ("échangeur de chaleur", "hvac", "m"), ("chaudière", "hvac", "f"),
        ("disque de frein", "brake", "m"), ("étrier de frein", "brake", "m"), ("frein d'essieu arrière", "brake", "m"),
        ("frein du palan", "brake", "m"),
    ],
}

PARTS = {
    "en": ["seal kit", "shaft seal", "O-ring", "V-belt", "drive belt", "timing belt", "air filter", "oil filter",
           "fuel filter", "return filter", "hydraulic hose", "bearing", "coupling", "contactor", "fuse",
           "relay", "pressure sensor", "temperature sensor", "proximity switch", "gasket", "impeller",
           "brake pads", "wiper blade", "solenoid valve", "check valve", "fan motor", "thermostat",
           "spark plug", "injector", "alternator belt", "cable gland", "encoder", "limit switch"],
    "es": ["kit de juntas", "retén", "junta tórica", "correa trapezoidal", "correa de transmisión",
           "correa de distribución", "filtro de aire", "filtro de aceite", "filtro de combustible",
           "filtro de retorno", "manguera hidráulica", "rodamiento", "acoplamiento", "contactor", "fusible",
           "relé", "sensor de presión", "sensor de temperatura", "detector de proximidad", "junta",
           "rodete", "pastillas de freno", "electroválvula", "válvula antirretorno", "termostato",
           "inyector", "encoder", "final de carrera"],
    "fr": ["kit de joints", "joint d'arbre", "joint torique", "courroie trapézoïdale", "courroie d'entraînement",
           "courroie de distribution", "filtre à air", "filtre à huile", "filtre à carburant", "filtre retour",
           "flexible hydraulique", "roulement", "accouplement", "contacteur", "fusible", "relais",
           "capteur de pression", "capteur de température", "détecteur de proximité", "joint", "roue",
           "plaquettes de frein", "électrovanne", "clapet anti-retour", "thermostat", "injecteur", "codeur",
           "fin de course"],
}

LOCATIONS = {
    "en": ["hall 2", "line 4", "building B", "bay 7", "the north wing", "substation 3", "the boiler room",
           "pump station 1", "the paint shop", "the warehouse", "deck 2", "the compressor room", "level 3",
           "the loading dock", "hangar 5", "the roof"],
    "es": ["la nave 2", "la línea 4", "el edificio B", "la bahía 7", "la subestación 3", "la sala de calderas",
           "la estación de bombeo 1", "el taller de pintura", "el almacén", "la sala de compresores",
           "la planta 3", "el muelle de carga", "el hangar 5", "la cubierta"],
    "fr": ["le hall 2", "la ligne 4", "le bâtiment B", "la travée 7", "le poste 3", "la chaufferie",
           "la station de pompage 1", "l'atelier peinture", "l'entrepôt", "la salle des compresseurs",
           "le niveau 3", "le quai de chargement", "le hangar 5", "la toiture"],
}

DEFECTS = {
    "en": ["oil leak at the shaft seal", "abnormal noise from the bearing", "excessive vibration",
           "cracked housing", "loose mounting bolts", "worn drive belt", "corrosion on the terminals",
           "overheating of the motor", "clogged filter", "hairline crack on the weld", "fluid seeping from the hose fitting",
           "damaged insulation on the cable", "misalignment of the coupling", "blown fuse", "sticking valve",
           "worn brake pads", "air in the hydraulic system", "low refrigerant charge", "intermittent fault on the sensor"],
    "es": ["fuga de aceite en el retén", "ruido anormal en el rodamiento", "vibración excesiva",
           "carcasa agrietada", "tornillos de fijación flojos", "correa desgastada", "corrosión en los bornes",
           "sobrecalentamiento del motor", "filtro obstruido", "fisura en la soldadura",
           "aislamiento del cable dañado", "desalineación del acoplamiento", "fusible fundido",
           "válvula agarrotada", "pastillas de freno desgastadas", "aire en el circuito hidráulico",
           "fallo intermitente del sensor"],
    "fr": ["fuite d'huile au joint d'arbre", "bruit anormal du roulement", "vibrations excessives",
           "carter fissuré", "boulons de fixation desserrés", "courroie usée", "corrosion sur les bornes",
           "échauffement du moteur", "filtre colmaté", "fissure sur la soudure", "isolant du câble endommagé",
           "désalignement de l'accouplement", "fusible grillé", "vanne grippée", "plaquettes de frein usées",
           "air dans le circuit hydraulique", "défaut intermittent du capteur"],
}

TYRES = {
    "en": ["front left", "front right", "rear left", "rear right"],
    "es": ["delantera izquierda", "delantera derecha", "trasera izquierda", "trasera derecha"],
    "fr": ["avant gauche", "avant droit", "arrière gauche", "arrière droit"],
}


class _Maint:
    """Maintenance / inspection report sentences."""

    def __init__(self, lang: str, rng: random.Random):
        self.lang = lang
        self.r = rng
        self.devices = DEVICES[lang]
        self.templates: list[tuple[int, Callable[[], str]]] = []

    # --- small pieces -------------------------------------------------------
    def n(self, lo, hi, dec):
        return _num(self.lang, self.r.uniform(lo, hi), dec)

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
            return _num(self.lang, v * 14.5, 0)
        return _num(self.lang, v, 1)

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


class _MaintEN(_Maint):
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
            s = f"{_cap(name)} {r.choice(self.INSPECT)}, {self.join(rd)}"
            if r.random() < 0.3:
                s += f", {r.choice(self.OK)}"
            return s + "."
        if t < 0.32:  # colon form
            name, d = self.devname()
            rd = self.readings(d[1], r.choice((1, 2, 3)))
            return f"{_cap(name)}: {self.join(rd)}."
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
                s += f" after {_num('en', r.randint(800, 24000), 0)} operating hours"
            return s + "."
        if t < 0.51:  # defect
            name, d = self.devname()
            defect = r.choice(DEFECTS["en"])
            form = r.random()
            if form < 0.4:
                s = f"{_cap(defect)} on {name}"
            elif form < 0.7:
                s = f"{_cap(name)} shows {defect}"
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
                s = f"{_cap(fast)} torqued to {val} {unit}"
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
                s = f"{_cap(name)} operating hours {_num('en', r.randint(100, 60000), 0)}, next service due at {_num('en', r.randint(500, 65000) // 250 * 250, 0)}"
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
            return f"{_cap(rd)} on {name}, {lim}."
        # firmware / serial / misc
        name, d = self.devname()
        k = r.random()
        if k < 0.5:
            return (f"{_cap(name)} firmware updated to version {r.randint(1, 6)}.{r.randint(0, 12)}."
                    f"{r.randint(0, 30)}.")
        if k < 0.75:
            return f"New {name} installed, serial number {self.serial()}."
        return f"{_cap(r.choice(self.ACTION))} {r.choice(PARTS['en'])}, {name} tested and OK."


class _MaintES(_Maint):
    INSPECT = ["inspeccionado", "revisado", "comprobado", "verificado", "probado"]
    INSPECT_F = ["inspeccionada", "revisada", "comprobada", "verificada", "probada"]
    OK = ["todos los valores dentro de límites", "sin anomalías", "en buen estado", "correcto",
          "dentro de tolerancia", "no requiere acción", "sin fugas", "funcionamiento normal"]

    def sentence(self):
        r = self.r
        t = r.random()
        if t < 0.25:
            name, d = self.devname()
            rd = self.readings(d[1], r.choice((1, 2, 2, 3, 3)))
            insp = r.choice(self.INSPECT_F if d[2] == "f" else self.INSPECT)
            s = f"{_cap(name)} {insp}, {self.join(rd)}"
            if r.random() < 0.3:
                s += f", {r.choice(self.OK)}"
            return s + "."
        if t < 0.35:
            name, d = self.devname()
            rd = self.readings(d[1], r.choice((1, 2, 3)))
            return f"{_cap(name)}: {self.join(rd)}."
        if t < 0.47:
            name, d = self.devname()
            part = r.choice(PARTS["es"])
            art = "del" if d[2] == "m" else "de la"
            verb = r.choice(("Sustituido", "Cambiado", "Se sustituye", "Se cambia", "Montado nuevo"))
            s = f"{verb} {part} {art} {name}"
            k = r.random()
            if k < 0.35:
                s += f", tornillos apretados a {r.choice((25, 30, 40, 45, 50, 65, 80, 120, 210))} {r.choice(('Nm', 'newton metro'))}"
            elif k < 0.55:
                s += f", número de serie {self.serial()}"
            elif k < 0.7:
                s += f" tras {r.randint(800, 24000)} horas de funcionamiento"
            return s + "."
        if t < 0.57:
            name, d = self.devname()
            defect = r.choice(DEFECTS["es"])
            art = "del" if d[2] == "m" else "de la"
            form = r.random()
            if form < 0.5:
                s = f"{_cap(defect)} {r.choice(('en', 'en'))} {'el' if d[2] == 'm' else 'la'} {name}"
            else:
                s = f"Se detecta {defect} {art} {name}"
            if r.random() < 0.45:
                s += f", {self.reading(d[1])[1]}"
            if r.random() < 0.4:
                s += f". Orden de trabajo {self.wo()} creada"
            elif r.random() < 0.3:
                s += r.choice((". Se informa al jefe de turno", ". Equipo fuera de servicio",
                               ". Reparación prevista en la próxima parada", ". Repuesto pedido"))
            return s + "."
        if t < 0.64:
            veh = r.choice(("Camión", "Carretilla", "Furgoneta", "Remolque", "Vehículo", "Autobús"))
            parts = [f"{p} {self.tyre(veh)} bar" for p in TYRES["es"]]
            head = r.choice((f"{veh} {r.randint(1, 40)}, presión de neumáticos", "Presión de neumáticos",
                             "Presiones de ruedas"))
            s = f"{head}: {self.join(parts)}"
            if r.random() < 0.3:
                s += f", profundidad del dibujo {self.n(1.6, 12, 1)} milímetros"
            return s + "."
        if t < 0.71:
            k = r.random()
            if k < 0.5:
                s = f"Tensión de batería {self.n(11.6, 13.9, 1)} {r.choice(('V', 'voltios'))}"
                if r.random() < 0.5:
                    s += f", tensión de carga {self.n(13.8, 14.6, 1)} V"
            else:
                s = f"Resistencia de aislamiento {r.choice(('L1', 'L2', 'L3', 'fase 1', 'fase 2'))} a tierra {r.randint(5, 2500)} megaohmios"
            return s + "."
        if t < 0.79:
            name, d = self.devname()
            art = "del" if d[2] == "m" else "de la"
            k = r.random()
            if k < 0.5:
                s = f"Orden de trabajo {self.wo()}, {r.choice(('limpieza', 'ajuste', 'engrase', 'sustitución', 'reparación'))} {r.choice(('de la', 'del'))} {r.choice(PARTS['es'])} {art} {name}"
                s = s.replace("de la kit", "del kit")
            else:
                s = f"Orden de trabajo {self.wo()} cerrada, {name} {r.choice(('de nuevo en servicio', 'liberad' + ('a' if d[2] == 'f' else 'o') + ' para producción', 'operativ' + ('a' if d[2] == 'f' else 'o')))}"
            if r.random() < 0.3:
                s += f", tiempo empleado {self.n(0.5, 8, 1)} horas"
            return s + "."
        if t < 0.85:
            fast = r.choice(("Tuercas de rueda", "Tornillos de culata", "Tornillos de brida", "Tornillos de anclaje",
                             "Tornillos de fijación", "Conexiones de las barras"))
            val = r.choice((8, 10, 12, 25, 35, 45, 50, 65, 85, 110, 120, 180, 250, 300, 450))
            s = f"{fast} apretad{'as' if fast.startswith(('Tuercas', 'Conexiones')) else 'os'} a {val} {r.choice(('Nm', 'newton metro'))}"
            if r.random() < 0.3:
                s += r.choice((" en cruz", ", marcados con pintura", ", todo correcto"))
            return s + "."
        if t < 0.9:
            part = r.choice(("Pastilla de freno", "Forro de freno", "Disco de embrague", "Placa de desgaste", "Casquillo"))
            s = f"{part}, espesor {self.n(1.5, 14, 1)} {r.choice(('milímetros', 'mm'))}"
            if r.random() < 0.6:
                s += f", límite {self.n(1, 4, 1)} milímetros"
            return s + "."
        if t < 0.95:
            name, d = self.devname()
            key, rd = self.reading(d[1])
            s = f"Lectura en {'el' if d[2] == 'm' else 'la'} {name}"
            if r.random() < 0.4:
                s += f" a las {r.randint(6, 22)}:{r.choice(('00', '15', '30', '45', '10', '20'))}"
            return s + f": {rd}."
        name, d = self.devname()
        key, rd = self.reading(d[1])
        lim = r.choice(("por encima del límite de alarma", "por debajo del mínimo", "ligeramente alta",
                        "de nuevo normal", "cerca del nivel de disparo"))
        return f"{_cap(rd)} en {'el' if d[2] == 'm' else 'la'} {name}, {lim}."


class _MaintFR(_Maint):
    INSPECT = ["inspecté", "contrôlé", "vérifié", "testé", "révisé"]
    OK = ["toutes les valeurs dans les limites", "aucune anomalie", "bon état", "RAS",
          "dans la tolérance", "aucune action requise", "pas de fuite", "fonctionnement normal"]

    @staticmethod
    def de(name, g):
        if name[0] in "aeiouéèêâôhAEIOUÉ":
            return f"de l'{name}"
        return f"du {name}" if g == "m" else f"de la {name}"

    FEM_PARTS = {"courroie trapézoïdale", "courroie d'entraînement", "courroie de distribution", "roue",
                 "électrovanne", "fin de course"}

    def de_part(self, part):
        if part.startswith("plaquettes"):
            return f"des {part}"
        return self.de(part, "f" if part in self.FEM_PARTS else "m")

    @staticmethod
    def le(name, g):
        if name[0] in "aeiouéèêâôhAEIOUÉ":
            return f"l'{name}"
        return f"le {name}" if g == "m" else f"la {name}"

    def sentence(self):
        r = self.r
        t = r.random()
        if t < 0.25:
            name, d = self.devname()
            rd = self.readings(d[1], r.choice((1, 2, 2, 3, 3)))
            insp = r.choice(self.INSPECT) + ("e" if d[2] == "f" else "")
            s = f"{_cap(name)} {insp}, {self.join(rd)}"
            if r.random() < 0.3:
                s += f", {r.choice(self.OK)}"
            return s + "."
        if t < 0.35:
            name, d = self.devname()
            rd = self.readings(d[1], r.choice((1, 2, 3)))
            return f"{_cap(name)} : {self.join(rd)}."
        if t < 0.47:
            name, d = self.devname()
            part = r.choice(PARTS["fr"])
            verb = r.choice(("Remplacement", "Changement", "Montage"))
            s = f"{verb} {self.de_part(part)} sur {self.le(name, d[2])}"
            k = r.random()
            if k < 0.35:
                s += f", vis serrées à {r.choice((25, 30, 40, 45, 50, 65, 80, 120, 210))} {r.choice(('Nm', 'newtons mètres'))}"
            elif k < 0.55:
                s += f", numéro de série {self.serial()}"
            elif k < 0.7:
                s += f" après {r.randint(800, 24000)} heures de fonctionnement"
            return s + "."
        if t < 0.57:
            name, d = self.devname()
            defect = r.choice(DEFECTS["fr"])
            if r.random() < 0.5:
                s = f"{_cap(defect)} sur {self.le(name, d[2])}"
            else:
                s = f"Constaté {defect} sur {self.le(name, d[2])}"
            if r.random() < 0.45:
                s += f", {self.reading(d[1])[1]}"
            if r.random() < 0.4:
                s += f". Ordre de travail {self.wo()} créé"
            elif r.random() < 0.3:
                s += r.choice((". Chef d'équipe prévenu", ". Équipement consigné",
                               ". Réparation prévue au prochain arrêt", ". Pièce commandée"))
            return s + "."
        if t < 0.64:
            veh = r.choice(("Camion", "Chariot", "Fourgon", "Remorque", "Véhicule", "Bus"))
            parts = [f"{p} {self.tyre(veh)} bar" for p in TYRES["fr"]]
            head = r.choice((f"{veh} {r.randint(1, 40)}, pression des pneus", "Pression des pneus",
                             "Pressions pneumatiques"))
            s = f"{head} : {self.join(parts)}"
            if r.random() < 0.3:
                s += f", profondeur de sculpture {self.n(1.6, 12, 1)} millimètres"
            return s + "."
        if t < 0.71:
            if r.random() < 0.5:
                s = f"Tension batterie {self.n(11.6, 13.9, 1)} {r.choice(('V', 'volts'))}"
                if r.random() < 0.5:
                    s += f", tension de charge {self.n(13.8, 14.6, 1)} V"
            else:
                s = f"Résistance d'isolement {r.choice(('L1', 'L2', 'L3', 'phase 1', 'phase 2'))} terre {r.randint(5, 2500)} mégohms"
            return s + "."
        if t < 0.79:
            name, d = self.devname()
            if r.random() < 0.5:
                s = (f"Ordre de travail {self.wo()}, {r.choice(('nettoyage', 'réglage', 'graissage', 'remplacement', 'réparation'))} "
                     f"{self.de_part(r.choice(PARTS['fr']))} {self.de(name, d[2])}")
            else:
                s = f"Ordre de travail {self.wo()} clôturé, {name} {r.choice(('remis' + ('e' if d[2] == 'f' else '') + ' en service', 'disponible pour la production', 'opérationnel' + ('le' if d[2] == 'f' else '')))}"
            if r.random() < 0.3:
                s += f", temps passé {self.n(0.5, 8, 1)} heures"
            return s + "."
        if t < 0.85:
            fast = r.choice(("Écrous de roue", "Vis de culasse", "Boulons de bride", "Boulons d'ancrage",
                             "Vis de fixation", "Connexions du jeu de barres"))
            val = r.choice((8, 10, 12, 25, 35, 45, 50, 65, 85, 110, 120, 180, 250, 300, 450))
            s = f"{fast} serrés à {val} {r.choice(('Nm', 'newtons mètres'))}"
            if r.random() < 0.3:
                s += r.choice((" en croix", ", marqués à la peinture", ", tout est conforme"))
            return s + "."
        if t < 0.9:
            part = r.choice(("Plaquette de frein", "Garniture de frein", "Disque d'embrayage", "Plaque d'usure", "Bague"))
            s = f"{part}, épaisseur {self.n(1.5, 14, 1)} {r.choice(('millimètres', 'mm'))}"
            if r.random() < 0.6:
                s += f", limite {self.n(1, 4, 1)} millimètres"
            return s + "."
        if t < 0.95:
            name, d = self.devname()
            key, rd = self.reading(d[1])
            s = f"Relevé sur {self.le(name, d[2])}"
            if r.random() < 0.4:
                s += f" à {r.randint(6, 22)}h{r.choice(('00', '15', '30', '45', '10', '20'))}"
            return s + f" : {rd}."
        name, d = self.devname()
        key, rd = self.reading(d[1])
        lim = r.choice(("au-dessus du seuil d'alarme", "en dessous du minimum", "légèrement élevée",
                        "revenue à la normale", "proche du seuil de déclenchement"))
        return f"{_cap(rd)} sur {self.le(name, d[2])}, {lim}."


# --------------------------------------------------------------------------
# in-car commands
# --------------------------------------------------------------------------

INCAR = {
    "en": {
        "wake": ["Hey car, ", "OK car, ", "Hey Mercedes, ", "Hello car, "],
        "polite_pre": ["Please ", "Can you ", "Could you "],
        "contacts": ["Mom", "Dad", "John", "Sarah", "Emily", "Michael", "David", "Anna", "the office", "home",
                     "my wife", "my husband", "Grandma", "Dr. Miller", "Jessica", "Chris", "Alex", "Tom Baker",
                     "Lisa Wong", "customer service", "roadside assistance", "Kevin", "Maria", "the dentist"],
        "pois": ["gas station", "charging station", "EV charger", "parking lot", "parking garage", "hospital",
                 "pharmacy", "coffee shop", "Starbucks", "McDonald's", "restaurant", "hotel", "supermarket",
                 "ATM", "car wash", "airport", "train station", "police station", "rest area", "mechanic"],
        "cities": ["Boston", "Chicago", "San Francisco", "Seattle", "Denver", "New York", "Los Angeles",
                   "Austin", "Miami", "Portland", "Toronto", "Atlanta", "Phoenix", "Dallas", "San Diego",
                   "Philadelphia", "Detroit", "Nashville"],
        "streets": ["Main Street", "Oak Avenue", "Elm Street", "Park Road", "Maple Drive", "Washington Boulevard",
                    "5th Avenue", "Sunset Boulevard", "Market Street", "Lake Shore Drive", "Pine Street",
                    "2nd Street", "Broadway", "Highland Avenue"],
        "genres": ["jazz", "classical music", "rock", "pop music", "country music", "hip hop", "some relaxing music",
                   "the news", "my workout playlist", "my favorites", "my road trip playlist", "podcasts",
                   "the latest episode", "80s hits", "something upbeat"],
        "artists": ["The Beatles", "Taylor Swift", "Queen", "Ed Sheeran", "Adele", "Coldplay", "Beyoncé",
                    "Bruno Mars", "Michael Jackson", "Pink Floyd", "Drake", "Billie Eilish", "Elton John"],
        "stations": ["NPR", "BBC World Service", "the traffic channel", "the sports station", "the jazz station"],
    },
}


class _InCarEN:
    def __init__(self, rng):
        self.r = rng
        self.d = INCAR["en"]

    def temp(self):
        r = self.r
        if r.random() < 0.8:
            v = r.choice((16, 17, 18, 19, 20, 20, 21, 21, 22, 22, 22, 23, 23, 24, 25, 26, 27, 28))
            if r.random() < 0.15:
                return f"{v}.5 degrees"
            return f"{v} degrees"
        return f"{r.randint(60, 80)} degrees"

    def side(self):
        return self.r.choice(("driver", "passenger", "driver's", "passenger", "front", "rear", "left rear",
                              "right rear", "all"))

    def wrap(self, core: str, question=False) -> str:
        """Optionally add wake word, polite prefix/suffix; core is lower-case imperative without period."""
        r = self.r
        k = r.random()
        if not question and k < 0.15 and "," not in core:
            core = r.choice(self.d["polite_pre"]).lower().strip() + " " + core
            if core.startswith(("can you", "could you")):
                question = True
        if not question and r.random() < 0.08:
            core += ", please"
        if r.random() < 0.08:
            s = r.choice(self.d["wake"]) + core
        else:
            s = _cap(core)
        if s.endswith("."):
            return s if not question else s + "?"
        return s + ("?" if question else ".")

    def sentence(self) -> str:
        r = self.r
        d = self.d
        t = r.random()
        if t < 0.16:  # climate
            k = r.random()
            if k < 0.3:
                c = r.choice(("set the temperature to {t}", "set temperature to {t}", "change the temperature to {t}",
                              "make it {t}", "set the {s} side to {t}", "set the {s} temperature to {t}",
                              "set the cabin temperature to {t}"))
                c = c.format(t=self.temp(), s=r.choice(("driver", "passenger", "left", "right")))
            elif k < 0.55:
                c = r.choice(("turn on the air conditioning", "turn off the air conditioning", "turn on the AC",
                              "turn off the AC", "switch on the climate control", "turn on the heater",
                              "turn off the heater", "turn on the defroster", "turn on the rear defroster",
                              "defrost the windshield", "turn on recirculation", "turn off recirculation",
                              "turn on automatic climate control", "turn on max AC", "turn the heat up",
                              "turn the heat down", "make it warmer", "make it cooler"))
            elif k < 0.75:
                c = r.choice(("set the fan speed to {n}", "set the fan to level {n}", "turn the fan up",
                              "turn the fan down", "fan speed {n}", "increase the fan speed",
                              "decrease the fan speed")).format(n=r.randint(1, 7))
            else:
                c = r.choice(("turn on the seat heating", "turn on the {s} seat heater", "turn off the {s} seat heater",
                              "set the {s} seat heating to level {n}", "turn on the seat ventilation",
                              "turn on the steering wheel heating", "turn off the steering wheel heating",
                              "heat my seat", "cool my seat", "set seat heating to {n}")).format(
                    s=r.choice(("driver", "passenger", "driver's", "rear")), n=r.randint(1, 3))
            if r.random() < 0.05:
                return "It's too " + r.choice(("hot", "cold", "warm", "stuffy")) + " in here."
            return self.wrap(c)
        if t < 0.27:  # windows / doors / lights
            k = r.random()
            if k < 0.6:
                c = r.choice(("open the {s} window", "close the {s} window", "roll down the {s} window",
                              "roll up the {s} window", "open the {s} window halfway", "open the {s} window {p} percent",
                              "close all windows", "open all windows", "open the sunroof", "close the sunroof",
                              "tilt the sunroof", "open the sunshade", "close the sunshade", "vent the windows",
                              "open the trunk", "lock the doors", "unlock the doors", "fold the mirrors"))
                c = c.format(s=r.choice(("driver", "passenger", "driver's", "rear left", "rear right", "back",
                                         "front")), p=r.choice((10, 20, 25, 30, 50, 75)))
            else:
                c = r.choice(("turn on the interior lights", "turn off the interior lights", "turn on the reading light",
                              "dim the display", "set the ambient light to {c}", "change the ambient lighting to {c}",
                              "turn on the fog lights", "turn on the high beams", "turn off the high beams",
                              "set the display brightness to {p} percent", "turn on night mode",
                              "turn on the wipers", "turn off the wipers", "set the wipers to {w}",
                              "turn on the headlights")).format(
                    c=r.choice(("blue", "red", "green", "purple", "white", "orange", "warm white")),
                    p=r.choice((20, 30, 40, 50, 60, 70, 80, 100)), w=r.choice(("automatic", "fast", "slow", "intermittent")))
            return self.wrap(c)
        if t < 0.45:  # media
            k = r.random()
            if k < 0.3:
                c = r.choice(("play {g}", "play some {g}", "play {a}", "play songs by {a}", "play the latest album by {a}",
                              "put on {g}", "shuffle {g}", "play {a} on Spotify", "I want to listen to {a}",
                              "play something by {a}", "play {g} on Spotify")).format(g=r.choice(d["genres"]),
                                                                                      a=r.choice(d["artists"]))
                c = c.replace("some some", "some").replace("some my", "my").replace("some the", "the")
            elif k < 0.55:
                c = r.choice(("next song", "previous song", "skip this song", "skip", "pause the music", "pause",
                              "resume", "resume playback", "stop the music", "play the next track",
                              "go back to the previous track", "repeat this song", "turn on shuffle",
                              "turn off shuffle", "mute", "unmute", "like this song", "what song is this"))
                if c == "what song is this":
                    return self.wrap(c, question=True)
            elif k < 0.8:
                c = r.choice(("turn up the volume", "turn down the volume", "volume up", "volume down",
                              "set the volume to {v}", "volume {v}", "turn it up", "turn it down", "louder", "quieter",
                              "set volume to {v} percent", "increase the volume by {s}", "lower the volume by {s}")).format(
                    v=r.randint(1, 30) if r.random() < 0.5 else r.choice((10, 20, 30, 40, 50, 60, 70)),
                    s=r.randint(2, 5))
            else:
                fm = f"{r.randint(88, 107)}.{r.choice((1, 3, 5, 7, 9))}"
                c = r.choice(("switch to FM", "switch to AM", "switch to Bluetooth", "switch to USB", "switch to the radio",
                              "tune to {fm} FM", "play {fm} FM", "switch to {fm}", "tune the radio to {am} AM",
                              "play {st}", "turn on the radio", "turn off the radio", "next station",
                              "previous station", "save this station", "play Apple CarPlay", "open Android Auto")).format(
                    fm=fm, am=r.choice((570, 660, 710, 770, 880, 1010, 1130, 1500)), st=r.choice(d["stations"]))
            return self.wrap(c)
        if t < 0.68:  # navigation
            k = r.random()
            if k < 0.35:
                c = r.choice(("navigate to the nearest {p}", "find the nearest {p}", "take me to the nearest {p}",
                              "find a {p} nearby", "find a {p} on my route", "show me {p}s nearby",
                              "navigate to a {p}", "where is the nearest {p}", "is there a {p} nearby"))
                p = r.choice(d["pois"])
                c = c.format(p=p)
                if p in ("Starbucks", "McDonald's"):
                    c = c.replace(p + "s nearby", p + " locations nearby")
                if re.search(r"\ba [aeiouAEIO]", c):
                    c = re.sub(r"\ba ([aeiouAEIO])", r"an \1", c)
                if c.startswith(("where", "is there")):
                    return self.wrap(c, question=True)
            elif k < 0.55:
                c = r.choice(("navigate to {n} {st}", "take me to {n} {st}", "drive to {n} {st}, {city}",
                              "navigate to {city}", "get directions to {city}", "navigate to {n} {st} in {city}",
                              "set the destination to {n} {st}", "how long to {city}")).format(
                    n=r.randint(1, 4999), st=r.choice(d["streets"]), city=r.choice(d["cities"]))
                if c.startswith("how"):
                    return self.wrap(c, question=True)
            elif k < 0.75:
                c = r.choice(("take me home", "navigate home", "navigate to work", "take me to work",
                              "cancel navigation", "cancel the route", "stop navigation", "avoid tolls",
                              "avoid highways", "avoid ferries", "show an alternative route", "find a faster route",
                              "zoom in on the map", "zoom out", "mute the navigation", "show the whole route",
                              "add a stop at a {p}", "repeat the last instruction", "show traffic on the map"))
                c = c.format(p=r.choice(("gas station", "coffee shop", "charging station", "supermarket")))
            else:
                c = r.choice(("how far is it to my destination", "what's my ETA", "when will we arrive",
                              "how much longer", "how's the traffic ahead", "what is the speed limit here",
                              "how many miles to empty", "what's the range", "where am I",
                              "is there traffic on the way to work"))
                return self.wrap(c, question=True)
            return self.wrap(c)
        if t < 0.85:  # phone / messages
            k = r.random()
            who = r.choice(d["contacts"])
            if k < 0.45:
                c = r.choice(("call {w}", "call {w}", "call {w} on mobile", "call {w} at work", "dial {w}",
                              "phone {w}", "make a call to {w}", "call {w} on speaker")).format(w=who)
            elif k < 0.6:
                num = f"{r.randint(200, 989)}-{r.randint(200, 999)}-{r.randint(0, 9999):04d}"
                c = r.choice(("call {n}", "dial {n}")).format(n=num)
            elif k < 0.85:
                msg = r.choice(("I'm running late", "I'll be there in {m} minutes", "I'm on my way",
                                "I'm stuck in traffic", "see you soon", "I'll call you back", "call me when you can",
                                "can you pick up some milk", "I'm almost home", "start without me",
                                "I'll be home at {h}")).format(m=r.choice((5, 10, 15, 20, 30, 45)),
                                                               h=f"{r.randint(5, 11)}:{r.choice(('00', '15', '30', '45'))}")
                c = r.choice(("send a message to {w} saying {m}", "text {w} {m}", "send {w} a text saying {m}",
                              "tell {w} {m}", "message {w}, {m}")).format(w=who, m=msg)
            else:
                c = r.choice(("read my messages", "read my last message", "answer the call", "decline the call",
                              "hang up", "end the call", "redial", "call back the last number",
                              "open my recent calls", "show missed calls", "reply to {w}")).format(w=who)
            return self.wrap(c)
        # info / misc
        k = r.random()
        if k < 0.45:
            c = r.choice(("what's the weather like in {c}", "what's the weather today", "will it rain tomorrow",
                          "what's the weather going to be like in {c} tomorrow", "what time is it",
                          "what's the temperature outside", "how much fuel do I have left", "what's my tire pressure",
                          "when is my next appointment", "what's on my calendar today", "is the trunk closed",
                          "how's the battery charge")).format(c=r.choice(d["cities"]))
            return self.wrap(c, question=True)
        c = r.choice(("set a reminder for {h}", "remind me to {task} at {h}", "remind me to {task}",
                      "set a timer for {m} minutes", "turn on cruise control", "set cruise control to {s} miles per hour",
                      "set the speed limiter to {k} kilometers per hour", "turn on lane assist", "turn off lane assist",
                      "turn on the parking camera", "show the rear camera", "switch to sport mode", "switch to eco mode",
                      "switch to comfort mode", "open the settings", "show the trip computer", "reset the trip meter",
                      "change the language to Spanish", "turn on do not disturb", "connect my phone",
                      "pair a new Bluetooth device", "open the garage door")).format(
            h=f"{r.randint(1, 12)}:{r.choice(('00', '15', '30', '45', '10', '20', '50'))}"
              + r.choice(("", "", " p.m.", " a.m.")),
            m=r.choice((5, 10, 15, 20, 30)), s=r.choice((45, 55, 60, 65, 70, 75)),
            k=r.choice((30, 50, 80, 100, 110, 120, 130)),
            task=r.choice(("call Mom", "buy groceries", "pick up the kids", "charge the car", "check the oil",
                           "book a service appointment", "get gas")))
        return self.wrap(c)


INCAR_ES = {
    "contacts": ["mamá", "papá", "Juan", "María", "Carmen", "José", "Lucía", "Pablo", "la oficina", "casa",
                 "mi mujer", "mi marido", "la abuela", "el doctor Martínez", "Ana", "Carlos", "Laura", "Javier",
                 "asistencia en carretera", "el taller"],
    "pois": [("gasolinera", "f"), ("estación de carga", "f"), ("aparcamiento", "m"), ("hospital", "m"),
             ("farmacia", "f"), ("cafetería", "f"), ("restaurante", "m"), ("hotel", "m"), ("supermercado", "m"),
             ("cajero automático", "m"), ("lavadero de coches", "m"), ("aeropuerto", "m"),
             ("estación de tren", "f"), ("comisaría", "f"), ("área de servicio", "f"), ("taller", "m")],
    "cities": ["Madrid", "Barcelona", "Valencia", "Sevilla", "Bilbao", "Málaga", "Zaragoza", "Ciudad de México",
               "Guadalajara", "Monterrey", "Bogotá", "Buenos Aires", "Lima", "Santiago", "Granada", "Salamanca"],
    "streets": ["calle Mayor", "avenida de la Constitución", "calle de Alcalá", "paseo de Gracia",
                "calle Real", "avenida Reforma", "calle del Sol", "plaza de España", "calle Gran Vía",
                "avenida de América", "calle San Juan"],
    "genres": ["jazz", "música clásica", "rock", "música pop", "salsa", "reguetón", "flamenco",
               "música relajante", "las noticias", "mi lista de reproducción", "mis favoritos", "un pódcast",
               "éxitos de los 80"],
    "artists": ["Shakira", "Rosalía", "Alejandro Sanz", "Juanes", "Bad Bunny", "Enrique Iglesias",
                "Maná", "Julio Iglesias", "Luis Miguel", "Queen", "The Beatles"],
}


class _InCarES:
    def __init__(self, rng):
        self.r = rng
        self.d = INCAR_ES

    def wrap(self, core, question=False):
        r = self.r
        if not question and r.random() < 0.12:
            core = r.choice(("por favor, ", "quiero ")) + core if False else core
        if not question and r.random() < 0.1:
            core += ", por favor"
        if question:
            return "¿" + _cap(core) + "?"
        if r.random() < 0.06:
            return "Oye coche, " + core + "."
        return _cap(core) + "."

    def temp(self):
        r = self.r
        v = r.choice((16, 17, 18, 19, 20, 21, 21, 22, 22, 23, 24, 25, 26))
        return f"{v},5 grados" if r.random() < 0.12 else f"{v} grados"

    def sentence(self):
        r = self.r
        d = self.d
        t = r.random()
        if t < 0.17:
            c = r.choice(("pon la temperatura a {t}", "sube la temperatura a {t}", "baja la temperatura a {t}",
                          "temperatura a {t}", "pon el lado del {s} a {t}", "enciende el aire acondicionado",
                          "apaga el aire acondicionado", "enciende la calefacción", "apaga la calefacción",
                          "activa el desempañador", "desempaña el parabrisas", "activa la recirculación",
                          "desactiva la recirculación", "pon el ventilador al nivel {n}", "sube el ventilador",
                          "baja el ventilador", "enciende la calefacción del asiento",
                          "enciende la calefacción del asiento del {s}", "pon la calefacción del asiento al nivel {l}",
                          "enciende el volante calefactado", "activa la ventilación del asiento", "hace mucho calor",
                          "tengo frío")).format(t=self.temp(), s=r.choice(("conductor", "acompañante")),
                                                n=r.randint(1, 7), l=r.randint(1, 3))
            return self.wrap(c)
        if t < 0.28:
            c = r.choice(("abre la ventanilla del {s}", "cierra la ventanilla del {s}", "baja la ventanilla del {s}",
                          "sube la ventanilla del {s}", "abre la ventanilla del {s} hasta la mitad",
                          "abre la ventanilla del {s} un {p} por ciento", "cierra todas las ventanillas",
                          "abre el techo solar", "cierra el techo solar", "abre el maletero", "bloquea las puertas",
                          "desbloquea las puertas", "enciende las luces interiores", "apaga las luces interiores",
                          "pon la luz ambiental en {c}", "enciende los antinieblas", "enciende las luces largas",
                          "activa los limpiaparabrisas", "pon el brillo de la pantalla al {p} por ciento",
                          "activa el modo nocturno")).format(
                s=r.choice(("conductor", "acompañante", "lado izquierdo", "lado derecho")),
                p=r.choice((10, 20, 25, 30, 50, 75)), c=r.choice(("azul", "rojo", "verde", "morado", "blanco")))
            return self.wrap(c)
        if t < 0.46:
            fm = f"{r.randint(88, 107)}.{r.choice((1, 3, 5, 7, 9))}"
            c = r.choice(("pon {g}", "reproduce {g}", "pon música de {a}", "pon canciones de {a}",
                          "quiero escuchar a {a}", "pon {a} en Spotify", "siguiente canción", "canción anterior",
                          "salta esta canción", "pausa la música", "pausa", "continúa", "reanuda la reproducción",
                          "para la música", "repite esta canción", "activa el modo aleatorio", "silencio",
                          "sube el volumen", "baja el volumen", "pon el volumen a {v}", "volumen {v}",
                          "más alto", "más bajo", "cambia a la radio", "cambia a Bluetooth", "cambia a USB",
                          "sintoniza la {fm}", "pon la {fm} FM", "siguiente emisora", "emisora anterior",
                          "guarda esta emisora", "enciende la radio", "apaga la radio")).format(
                g=r.choice(d["genres"]), a=r.choice(d["artists"]), v=r.randint(1, 30), fm=fm)
            return self.wrap(c)
        if t < 0.68:
            k = r.random()
            if k < 0.4:
                p, g = r.choice(d["pois"])
                art = "el" if g == "m" else "la"
                una = "un" if g == "m" else "una"
                c = r.choice((f"llévame a {art} {p} más cercan{'o' if g == 'm' else 'a'}",
                              f"navega a {art} {p} más cercan{'o' if g == 'm' else 'a'}",
                              f"busca {una} {p} cerca", f"busca {una} {p} en la ruta",
                              f"dónde está {art} {p} más cercan{'o' if g == 'm' else 'a'}",
                              f"hay {una} {p} por aquí"))
                c = c.replace("a el ", "al ")
                if c.startswith(("dónde", "hay")):
                    return self.wrap(c, question=True)
            elif k < 0.6:
                c = r.choice(("navega a {st} {n}", "llévame a {st} {n}, {city}", "navega a {city}",
                              "cómo llego a {city}", "pon como destino {st} {n}")).format(
                    st=r.choice(d["streets"]), n=r.randint(1, 250), city=r.choice(d["cities"]))
                if c.startswith("cómo"):
                    return self.wrap(c, question=True)
            elif k < 0.8:
                c = r.choice(("llévame a casa", "vamos a casa", "llévame al trabajo", "cancela la navegación",
                              "cancela la ruta", "evita los peajes", "evita las autopistas", "busca una ruta más rápida",
                              "acerca el mapa", "aleja el mapa", "silencia la navegación",
                              "añade una parada en una gasolinera", "repite la última indicación"))
            else:
                c = r.choice(("cuánto falta para llegar", "a qué hora llegamos", "cuántos kilómetros quedan",
                              "cómo está el tráfico", "cuál es el límite de velocidad aquí", "dónde estoy",
                              "cuánta autonomía me queda"))
                return self.wrap(c, question=True)
            return self.wrap(c)
        if t < 0.86:
            who = r.choice(d["contacts"])
            k = r.random()
            if k < 0.5:
                c = r.choice(("llama a {w}", "llama a {w}", "llama a {w} al móvil", "marca a {w}",
                              "haz una llamada a {w}")).format(w=who)
                c = c.replace("a el ", "al ")
            elif k < 0.62:
                c = f"llama al {r.randint(600, 699)} {r.randint(100, 999)} {r.randint(100, 999)}"
            elif k < 0.85:
                msg = r.choice(("llego tarde", "llego en {m} minutos", "estoy de camino", "estoy en un atasco",
                                "te llamo luego", "ya casi estoy en casa", "empezad sin mí")).format(
                    m=r.choice((5, 10, 15, 20, 30)))
                c = r.choice(("envía un mensaje a {w} diciendo {m}", "manda un mensaje a {w}: {m}",
                              "dile a {w} que {m}")).format(w=who, m=msg).replace("a el ", "al ")
            else:
                c = r.choice(("lee mis mensajes", "lee el último mensaje", "contesta la llamada", "rechaza la llamada",
                              "cuelga", "vuelve a llamar", "muestra las llamadas perdidas"))
            return self.wrap(c)
        k = r.random()
        if k < 0.45:
            c = r.choice(("qué tiempo hace en {c}", "qué tiempo hará mañana en {c}", "va a llover mañana",
                          "qué hora es", "qué temperatura hace fuera", "cuánta gasolina me queda",
                          "cuál es la presión de los neumáticos", "qué tengo hoy en el calendario")).format(
                c=r.choice(d["cities"]))
            return self.wrap(c, question=True)
        c = r.choice(("recuérdame {task} a las {h}", "pon un recordatorio a las {h}", "pon un temporizador de {m} minutos",
                      "activa el control de crucero", "pon el limitador a {k} kilómetros por hora",
                      "activa el asistente de carril", "desactiva el asistente de carril", "muestra la cámara trasera",
                      "cambia al modo deportivo", "cambia al modo eco", "abre los ajustes", "conecta mi teléfono",
                      "activa el modo no molestar")).format(
            h=f"{r.randint(1, 12)}:{r.choice(('00', '15', '30', '45'))}", m=r.choice((5, 10, 15, 20, 30)),
            k=r.choice((50, 80, 90, 100, 120)), task=r.choice(("llamar a mamá", "hacer la compra", "recoger a los niños",
                                                              "cargar el coche", "pedir cita en el taller")))
        return self.wrap(c)


INCAR_FR = {
    "contacts": ["maman", "papa", "Pierre", "Marie", "Sophie", "Julien", "Camille", "Thomas", "le bureau",
                 "la maison", "ma femme", "mon mari", "mamie", "le docteur Martin", "Nicolas", "Claire", "Lucas",
                 "l'assistance dépannage", "le garage", "Isabelle"],
    "pois": [("station-service", "f"), ("borne de recharge", "f"), ("parking", "m"), ("hôpital", "m"),
             ("pharmacie", "f"), ("café", "m"), ("restaurant", "m"), ("hôtel", "m"), ("supermarché", "m"),
             ("distributeur de billets", "m"), ("station de lavage", "f"), ("aéroport", "m"), ("gare", "f"),
             ("commissariat", "m"), ("aire de repos", "f"), ("garage", "m"), ("boulangerie", "f")],
    "cities": ["Paris", "Lyon", "Marseille", "Toulouse", "Bordeaux", "Lille", "Nantes", "Strasbourg", "Nice",
               "Montréal", "Québec", "Bruxelles", "Genève", "Rennes", "Grenoble", "Montpellier"],
    "streets": ["rue de la Paix", "avenue des Champs-Élysées", "boulevard Saint-Michel", "rue Victor Hugo",
                "rue de la République", "avenue Jean Jaurès", "rue Sainte-Catherine", "place Bellecour",
                "rue du Commerce", "boulevard Haussmann", "rue Nationale"],
    "genres": ["du jazz", "de la musique classique", "du rock", "de la pop", "de la musique relaxante",
               "les informations", "ma playlist", "mes favoris", "un podcast", "des tubes des années 80",
               "du rap", "de la chanson française"],
    "artists": ["Édith Piaf", "Stromae", "Angèle", "Céline Dion", "Jacques Brel", "Daft Punk", "Indochine",
                "Zaz", "Johnny Hallyday", "Queen", "les Beatles"],
}


class _InCarFR:
    def __init__(self, rng):
        self.r = rng
        self.d = INCAR_FR

    def wrap(self, core, question=False):
        r = self.r
        if not question and r.random() < 0.1:
            core += ", s'il te plaît" if r.random() < 0.5 else ", s'il vous plaît"
        if question:
            return _cap(core) + " ?"
        if r.random() < 0.06:
            return "Dis voiture, " + core + "."
        return _cap(core) + "."

    def temp(self):
        r = self.r
        v = r.choice((16, 17, 18, 19, 20, 21, 21, 22, 22, 23, 24, 25, 26))
        return f"{v},5 degrés" if r.random() < 0.12 else f"{v} degrés"

    @staticmethod
    def a_le(p, g):
        if p[0] in "aeiouéèêâôhAEIOUÉ":
            return f"à l'{p}"
        return f"au {p}" if g == "m" else f"à la {p}"

    def sentence(self):
        r = self.r
        d = self.d
        t = r.random()
        if t < 0.17:
            c = r.choice(("mets la température à {t}", "règle la température à {t}", "monte la température à {t}",
                          "baisse la température à {t}", "température à {t}", "mets le côté {s} à {t}",
                          "allume la climatisation", "éteins la climatisation", "allume le chauffage",
                          "éteins le chauffage", "active le désembuage", "désembue le pare-brise",
                          "active le recyclage de l'air", "désactive le recyclage de l'air",
                          "mets la ventilation au niveau {n}", "augmente la ventilation", "baisse la ventilation",
                          "allume le siège chauffant", "allume le siège chauffant {s}",
                          "mets le siège chauffant au niveau {l}", "allume le volant chauffant",
                          "active la ventilation du siège", "il fait trop chaud", "j'ai froid")).format(
                t=self.temp(), s=r.choice(("conducteur", "passager")), n=r.randint(1, 7), l=r.randint(1, 3))
            return self.wrap(c)
        if t < 0.28:
            c = r.choice(("ouvre la fenêtre {s}", "ferme la fenêtre {s}", "baisse la vitre {s}", "remonte la vitre {s}",
                          "ouvre la fenêtre {s} à moitié", "ouvre la vitre {s} de {p} pour cent",
                          "ferme toutes les fenêtres", "ouvre le toit ouvrant", "ferme le toit ouvrant",
                          "ouvre le coffre", "verrouille les portes", "déverrouille les portes",
                          "allume le plafonnier", "éteins le plafonnier", "mets l'éclairage d'ambiance en {c}",
                          "allume les antibrouillards", "allume les feux de route", "active les essuie-glaces",
                          "règle la luminosité de l'écran à {p} pour cent", "active le mode nuit")).format(
                s=r.choice(("conducteur", "passager", "arrière gauche", "arrière droite", "avant")),
                p=r.choice((10, 20, 25, 30, 50, 75)), c=r.choice(("bleu", "rouge", "vert", "violet", "blanc")))
            return self.wrap(c)
        if t < 0.46:
            fm = f"{r.randint(88, 107)},{r.choice((1, 3, 5, 7, 9))}"
            c = r.choice(("mets {g}", "joue {g}", "mets de la musique de {a}", "mets des chansons de {a}",
                          "je veux écouter {a}", "mets {a} sur Spotify", "chanson suivante", "chanson précédente",
                          "passe cette chanson", "mets la musique en pause", "pause", "reprends la lecture",
                          "arrête la musique", "répète cette chanson", "active la lecture aléatoire", "coupe le son",
                          "monte le volume", "baisse le volume", "mets le volume à {v}", "volume {v}",
                          "plus fort", "moins fort", "passe à la radio", "passe en Bluetooth", "passe en USB",
                          "mets {fm}", "mets la radio sur {fm} FM", "station suivante", "station précédente",
                          "enregistre cette station", "allume la radio", "éteins la radio")).format(
                g=r.choice(d["genres"]), a=r.choice(d["artists"]), v=r.randint(1, 30), fm=fm)
            return self.wrap(c)
        if t < 0.68:
            k = r.random()
            if k < 0.4:
                p, g = r.choice(d["pois"])
                el = p[0] in "aeiouéèêâôh"
                art = "l'" if el else ("le " if g == "m" else "la ")
                un = "un" if g == "m" else "une"
                proche = "le plus proche" if g == "m" else "la plus proche"
                c = r.choice((f"emmène-moi {self.a_le(p, g)} {proche}", f"guide-moi vers {art}{p} {proche}",
                              f"trouve {un} {p} à proximité", f"trouve {un} {p} sur mon trajet",
                              f"où est {art}{p} {proche}", f"y a-t-il {un} {p} près d'ici"))
                if c.startswith(("où", "y a")):
                    return self.wrap(c, question=True)
            elif k < 0.6:
                c = r.choice(("va au {n} {st}", "emmène-moi au {n} {st} à {city}", "va à {city}",
                              "itinéraire vers {city}", "définis la destination {n} {st}")).format(
                    st=r.choice(d["streets"]), n=r.randint(1, 250), city=r.choice(d["cities"]))
            elif k < 0.8:
                c = r.choice(("rentre à la maison", "emmène-moi à la maison", "emmène-moi au travail",
                              "annule la navigation", "annule l'itinéraire", "évite les péages", "évite les autoroutes",
                              "trouve un itinéraire plus rapide", "zoome sur la carte", "dézoome",
                              "coupe le guidage vocal", "ajoute une étape dans une station-service",
                              "répète la dernière instruction"))
            else:
                c = r.choice(("combien de temps avant d'arriver", "à quelle heure on arrive",
                              "combien de kilomètres reste-t-il", "comment est la circulation",
                              "quelle est la limitation de vitesse ici", "où suis-je", "quelle est mon autonomie"))
                return self.wrap(c, question=True)
            return self.wrap(c)
        if t < 0.86:
            who = r.choice(d["contacts"])
            k = r.random()
            if k < 0.5:
                c = r.choice(("appelle {w}", "appelle {w}", "appelle {w} sur son portable", "téléphone à {w}",
                              "passe un appel à {w}")).format(w=who)
                c = c.replace("à le ", "au ")
            elif k < 0.62:
                c = f"appelle le 0{r.randint(1, 7)} {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)}"
            elif k < 0.85:
                msg = r.choice(("je suis en retard", "j'arrive dans {m} minutes", "je suis en route",
                                "je suis dans les bouchons", "je te rappelle", "je suis presque arrivé",
                                "commencez sans moi")).format(m=r.choice((5, 10, 15, 20, 30)))
                c = r.choice(("envoie un message à {w} : {m}", "envoie un SMS à {w} pour dire {m}",
                              "dis à {w} que {m}")).format(w=who, m=msg).replace("à le ", "au ")
                c = c.replace("que je", "que je").replace("que il", "qu'il")
            else:
                c = r.choice(("lis mes messages", "lis le dernier message", "décroche", "refuse l'appel",
                              "raccroche", "rappelle le dernier numéro", "affiche les appels manqués"))
            return self.wrap(c)
        k = r.random()
        if k < 0.45:
            c = r.choice(("quel temps fait-il à {c}", "quel temps fera-t-il demain à {c}", "va-t-il pleuvoir demain",
                          "quelle heure est-il", "quelle est la température extérieure", "combien d'essence me reste-t-il",
                          "quelle est la pression des pneus", "qu'est-ce que j'ai dans mon agenda aujourd'hui")).format(
                c=r.choice(d["cities"]))
            return self.wrap(c, question=True)
        c = r.choice(("rappelle-moi de {task} à {h}", "mets un rappel à {h}", "lance un minuteur de {m} minutes",
                      "active le régulateur de vitesse", "règle le limiteur à {k} kilomètres par heure",
                      "active l'aide au maintien de voie", "désactive l'aide au maintien de voie",
                      "affiche la caméra de recul", "passe en mode sport", "passe en mode éco", "ouvre les réglages",
                      "connecte mon téléphone", "active le mode ne pas déranger")).format(
            h=f"{r.randint(7, 22)}h{r.choice(('', '15', '30', '45'))}", m=r.choice((5, 10, 15, 20, 30)),
            k=r.choice((50, 80, 90, 110, 130)), task=r.choice(("appeler maman", "faire les courses",
                                                              "chercher les enfants", "recharger la voiture",
                                                              "prendre rendez-vous au garage")))
        return self.wrap(c)


_MAKERS = {
    ("maintenance", "en"): lambda rng: _MaintEN("en", rng),
    ("maintenance", "es"): lambda rng: _MaintES("es", rng),
    ("maintenance", "fr"): lambda rng: _MaintFR("fr", rng),
    ("incar", "en"): _InCarEN,
    ("incar", "es"): _InCarES,
    ("incar", "fr"): _InCarFR,
}


def generate(domain: str, lang: str = "en", n: int = 1000, seed: int = 0) -> Iterator[str]:
    """Yield ``n`` generated utterances (with repeats) for a generated domain."""
    key = (domain, lang)
    if key not in _MAKERS:
        raise ValueError(f"no generator for domain={domain!r} lang={lang!r}; "
                         f"generated: {sorted(_MAKERS)}")
    g = _MAKERS[key](random.Random(f"{domain}/{lang}/{seed}"))
    sent = g.sentence
    for _ in range(n):
        yield sent()


# --------------------------------------------------------------------------
# written-transcript style (for measuring the builder's style bridge)
# --------------------------------------------------------------------------

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
         "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def _int_words(n: int) -> str:
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + _int_words(rest))
    if n < 1000000:
        rest = n % 1000
        return _int_words(n // 1000) + " thousand" + ("" if rest == 0 else " " + _int_words(rest))
    return " ".join(_ONES[int(c)] for c in str(n))


def _number_words(tok: str) -> str:
    t = tok.replace(",", "")
    if "." in t:
        a, b = t.split(".", 1)
        return _int_words(int(a)) + " point " + " ".join(_ONES[int(c)] for c in b)
    if len(t) > 1 and t.startswith("0"):
        return " ".join(_ONES[int(c)] for c in t)
    return _int_words(int(t))


_UNIT_WORDS = [("°C", "degrees celsius"), ("mm/s", "millimeters per second"), ("l/min", "liters per minute"),
               ("MΩ", "megaohms"), ("Ω", "ohms"), ("kW", "kilowatts"), ("Nm", "newton meters"), ("Hz", "hertz"),
               ("dB", "decibels"), ("%", " percent"), ("mm", "millimeters"), ("V", "volts"), ("A", "amps"),
               ("RPM", "rpm")]


def _spell_id(m: "re.Match[str]") -> str:
    """'B2' -> 'b two', 'WO-4821' -> 'w o four eight two one', '2024-0117' -> 'two zero two four zero one one seven'."""
    tok = m.group(0)
    if re.fullmatch(r"L[123]", tok):
        return "l " + _ONES[int(tok[1])]
    out = []
    for ch in tok:
        if ch.isdigit():
            out.append(_ONES[int(ch)])
        elif ch.isalpha():
            out.append(ch.lower())
    return " ".join(out)


def written_style_en(s: str) -> str:
    """Render a Whisper-style English line the way human transcribers often write."""
    for sym, word in _UNIT_WORDS:
        if sym == "%":
            s = s.replace("%", word)
        else:
            s = re.sub(rf"(?<=\d) {re.escape(sym)}(?=[ ,.;:?]|$)", " " + word, s)
    s = re.sub(r"\b(?=[A-Za-z-]*\d)(?=[\dA-Za-z]*[A-Za-z])[A-Za-z\d]+(?:-[A-Za-z\d]+)*\b|\b\d+-\d+(?:-[A-Za-z\d]+)*\b",
               _spell_id, s)
    s = re.sub(r"(\d{1,2}):(\d\d)", lambda m: _int_words(int(m.group(1))) + " " +
               ("o'clock" if m.group(2) == "00" else ("oh " + _ONES[int(m.group(2)[1])] if m.group(2)[0] == "0"
                                                      else _int_words(int(m.group(2))))), s)
    s = re.sub(r"\b(\d+)\.(\d+)\.(\d+)\b",
               lambda m: " point ".join(_int_words(int(g)) for g in m.groups()), s)
    s = re.sub(r"\d[\d,]*(?:\.\d+)?(?=\D|$)",
               lambda m: _number_words(m.group(0).rstrip(",")) + ("," if m.group(0).endswith(",") else ""), s)
    s = s.lower().rstrip(".?!")
    s = re.sub(r"\s+", " ", s).strip()
    return s


# --------------------------------------------------------------------------
# committed splits
# --------------------------------------------------------------------------

def make_splits(domain: str, lang: str) -> tuple[list[str], list[str]]:
    """Train: the first SPLIT_TRAIN_N sentences of the train stream (seed SPLIT_TRAIN_SEED), repeats kept
    (real command logs repeat; frequencies matter for a token map).
    Test: the first SPLIT_TEST_N distinct sentences of an independent stream (seed SPLIT_TEST_SEED)
    that do not occur in train, so no test sentence is ever a train sentence."""
    train = list(generate(domain, lang, SPLIT_TRAIN_N, SPLIT_TRAIN_SEED))
    seen = set(train)
    test: list[str] = []
    for s in generate(domain, lang, 10 ** 7, SPLIT_TEST_SEED):
        if s not in seen:
            seen.add(s)
            test.append(s)
            if len(test) == SPLIT_TEST_N:
                break
    return train, test


def _write(path: str, lines: list[str], check: bool) -> bool:
    data = "".join(l + "\n" for l in lines).encode("utf-8")
    if check:
        try:
            with open(path, "rb") as f:
                same = f.read() == data
        except FileNotFoundError:
            same = False
        print(("ok      " if same else "DIFFERS ") + path, file=sys.stderr)
        return same
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print(f"wrote {path} ({len(lines)} lines)", file=sys.stderr)
    return True


def write_splits(root: str, check: bool = False) -> bool:
    ok = True
    for domain in DOMAINS:
        for lang in LANGS:
            train, test = make_splits(domain, lang)
            d = os.path.join(root, domain, lang)
            ok &= _write(os.path.join(d, "train.txt"), train, check)
            ok &= _write(os.path.join(d, "test.txt"), test, check)
    # written-transcript style rendering (en maintenance, train stream only; never test sentences)
    _, test = make_splits("maintenance", "en")
    test_set = set(test)
    written = [written_style_en(s) for s in generate("maintenance", "en", WRITTEN_N * 2, WRITTEN_SEED)
               if s not in test_set][:WRITTEN_N]
    ok &= _write(os.path.join(root, "maintenance", "en", "train_written.txt"), written, check)
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("domain", nargs="?", choices=DOMAINS)
    ap.add_argument("--lang", default="en", choices=LANGS)
    ap.add_argument("-n", type=int, default=1000, help="number of utterances to stream (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--written", action="store_true", help="render en lines in written-transcript style")
    ap.add_argument("--write-splits", action="store_true",
                    help="regenerate the committed corpora/<domain>/<lang>/{train,test}.txt files")
    ap.add_argument("--check", action="store_true", help="with --write-splits: compare, do not write")
    ap.add_argument("--root", default=os.path.dirname(os.path.abspath(__file__)))
    a = ap.parse_args(argv)
    if a.write_splits:
        return 0 if write_splits(a.root, a.check) else 1
    if not a.domain:
        ap.error("give a domain, or --write-splits")
    if a.written and a.lang != "en":
        ap.error("--written is implemented for en only")
    out = sys.stdout
    buf = []
    for s in generate(a.domain, a.lang, a.n, a.seed):
        buf.append(written_style_en(s) if a.written else s)
        if len(buf) >= 10000:
            out.write("\n".join(buf) + "\n")
            buf.clear()
    if buf:
        out.write("\n".join(buf) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
