"""In-car voice command sentences: English (``InCarEN``), and Spanish and French on one skeleton
(``InCarRomance.sentence``) driven by their template tables in ``corpgen_incar_tables.py``.

A sibling module of ``generate.py`` (``corpora/`` is not a package).  Every ``rng`` call is part of
the committed output: keep their order (``generate.py --write-splits --check``).
"""
from __future__ import annotations

import re

from corpgen_common import cap
from corpgen_incar_tables import INCAR


class InCarEN:
    """English in-car commands (template lists inline, vocabulary in ``INCAR["en"]``)."""

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
            s = cap(core)
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


class InCarRomance:
    """Sentence skeleton shared by es and fr: the branch thresholds and the order of ``rng`` calls are
    fixed here; the language supplies ``INCAR[lang]`` templates and the hooks below."""

    LANG: str

    def __init__(self, rng):
        self.r = rng
        self.d = INCAR[self.LANG]

    # --- hooks (each subclass) ----------------------------------------------
    def wrap(self, core: str, question: bool = False) -> str:
        """Capitals, final punctuation, sometimes 'please' or a wake word."""
        raise NotImplementedError

    def poi_commands(self, p: str, g: str) -> tuple[str, ...]:
        """'take me to / find / where is' templates for the point of interest ``p`` of gender ``g``."""
        raise NotImplementedError

    def contract(self, c: str) -> str:
        """Preposition + article contraction after a contact name was filled in."""
        raise NotImplementedError

    def phone_number(self) -> str:
        raise NotImplementedError

    def clock(self) -> str:
        raise NotImplementedError

    # --- the skeleton -------------------------------------------------------
    def temp(self):
        r = self.r
        v = r.choice((16, 17, 18, 19, 20, 21, 21, 22, 22, 23, 24, 25, 26))
        return f"{v},5 {self.d['degrees']}" if r.random() < 0.12 else f"{v} {self.d['degrees']}"

    def sentence(self):
        r = self.r
        d = self.d
        t = r.random()
        if t < 0.17:  # climate
            c = r.choice(d["climate"]).format(t=self.temp(), s=r.choice(d["climate_sides"]),
                                              n=r.randint(1, 7), l=r.randint(1, 3))
            return self.wrap(c)
        if t < 0.28:  # windows / doors / lights
            c = r.choice(d["windows"]).format(s=r.choice(d["window_sides"]), p=r.choice((10, 20, 25, 30, 50, 75)),
                                              c=r.choice(d["colors"]))
            return self.wrap(c)
        if t < 0.46:  # media
            fm = f"{r.randint(88, 107)}{d['fm_point']}{r.choice((1, 3, 5, 7, 9))}"
            c = r.choice(d["media"]).format(g=r.choice(d["genres"]), a=r.choice(d["artists"]),
                                            v=r.randint(1, 30), fm=fm)
            return self.wrap(c)
        if t < 0.68:  # navigation
            k = r.random()
            if k < 0.4:
                p, g = r.choice(d["pois"])
                c = r.choice(self.poi_commands(p, g))
                if c.startswith(d["poi_questions"]):
                    return self.wrap(c, question=True)
            elif k < 0.6:
                c = r.choice(d["address"]).format(st=r.choice(d["streets"]), n=r.randint(1, 250),
                                                  city=r.choice(d["cities"]))
                if c.startswith(d["address_questions"]):
                    return self.wrap(c, question=True)
            elif k < 0.8:
                c = r.choice(d["route"])
            else:
                return self.wrap(r.choice(d["trip_questions"]), question=True)
            return self.wrap(c)
        if t < 0.86:  # phone / messages
            who = r.choice(d["contacts"])
            k = r.random()
            if k < 0.5:
                c = self.contract(r.choice(d["call"]).format(w=who))
            elif k < 0.62:
                c = self.phone_number()
            elif k < 0.85:
                msg = r.choice(d["messages"]).format(m=r.choice((5, 10, 15, 20, 30)))
                c = self.contract(r.choice(d["send"]).format(w=who, m=msg))
            else:
                c = r.choice(d["phone_misc"])
            return self.wrap(c)
        # info / misc
        k = r.random()
        if k < 0.45:
            c = r.choice(d["info_questions"]).format(c=r.choice(d["cities"]))
            return self.wrap(c, question=True)
        c = r.choice(d["assistant"]).format(h=self.clock(), m=r.choice((5, 10, 15, 20, 30)),
                                            k=r.choice(d["limiter_speeds"]), task=r.choice(d["tasks"]))
        return self.wrap(c)


class InCarES(InCarRomance):
    LANG = "es"

    def wrap(self, core, question=False):
        r = self.r
        if not question:
            r.random()  # once chose a prefix, now unused; the draw is kept because the corpora depend on it
        if not question and r.random() < 0.1:
            core += ", por favor"
        if question:
            return "¿" + cap(core) + "?"
        if r.random() < 0.06:
            return "Oye coche, " + core + "."
        return cap(core) + "."

    def poi_commands(self, p, g):
        art, una, o = ("el", "un", "o") if g == "m" else ("la", "una", "a")
        return tuple(c.replace("a el ", "al ") for c in (
            f"llévame a {art} {p} más cercan{o}", f"navega a {art} {p} más cercan{o}",
            f"busca {una} {p} cerca", f"busca {una} {p} en la ruta",
            f"dónde está {art} {p} más cercan{o}", f"hay {una} {p} por aquí"))

    def contract(self, c):
        return c.replace("a el ", "al ")

    def phone_number(self):
        r = self.r
        return f"llama al {r.randint(600, 699)} {r.randint(100, 999)} {r.randint(100, 999)}"

    def clock(self):
        r = self.r
        return f"{r.randint(1, 12)}:{r.choice(('00', '15', '30', '45'))}"


class InCarFR(InCarRomance):
    LANG = "fr"

    def wrap(self, core, question=False):
        r = self.r
        if not question and r.random() < 0.1:
            core += ", s'il te plaît" if r.random() < 0.5 else ", s'il vous plaît"
        if question:
            return cap(core) + " ?"
        if r.random() < 0.06:
            return "Dis voiture, " + core + "."
        return cap(core) + "."

    @staticmethod
    def a_le(p, g):
        if p[0] in "aeiouéèêâôhAEIOUÉ":
            return f"à l'{p}"
        return f"au {p}" if g == "m" else f"à la {p}"

    def poi_commands(self, p, g):
        el = p[0] in "aeiouéèêâôh"
        art = "l'" if el else ("le " if g == "m" else "la ")
        un = "un" if g == "m" else "une"
        proche = "le plus proche" if g == "m" else "la plus proche"
        return (f"emmène-moi {self.a_le(p, g)} {proche}", f"guide-moi vers {art}{p} {proche}",
                f"trouve {un} {p} à proximité", f"trouve {un} {p} sur mon trajet",
                f"où est {art}{p} {proche}", f"y a-t-il {un} {p} près d'ici")

    def contract(self, c):
        return c.replace("à le ", "au ").replace("que il", "qu'il")

    def phone_number(self):
        r = self.r
        return (f"appelle le 0{r.randint(1, 7)} {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)} "
                f"{r.randint(10, 99)}")

    def clock(self):
        r = self.r
        return f"{r.randint(7, 22)}h{r.choice(('', '15', '30', '45'))}"
