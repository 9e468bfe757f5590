"""Spanish and French maintenance sentences: one skeleton (``MaintRomance.sentence``), per-language
phrase tables and a few grammar hooks (articles, gender agreement, elision).

A sibling module of ``generate.py`` (``corpora/`` is not a package).  The skeleton fixes the
branch thresholds and the order of every ``rng`` call; a hook must make exactly the calls its
language made before the two were merged (e.g. the Spanish ``r.choice(("en", "en"))``), or the
committed corpora change (``generate.py --write-splits --check``).
"""
from __future__ import annotations

from corpgen_common import cap
from corpgen_maint import Maint
from corpgen_maint_tables import DEFECTS, PARTS, TYRES


class MaintRomance(Maint):
    """Sentence skeleton shared by es and fr; subclasses fill the tables and hooks below."""

    OK: list[str]                  # ", <ok>" after an inspection
    COLON: str                     # "name<COLON>readings" (": " es, " : " fr)
    REPLACE: tuple[str, ...]       # verbs of the replaced-part sentence
    TORQUED: str                   # ", <TORQUED> 45 Nm"
    NM: tuple[str, ...]            # torque unit variants
    SERIAL: str                    # ", <SERIAL> AB12345"
    AFTER_HOURS: str               # " after {h} operating hours" ({h}: an integer)
    WO: str                        # "work order"
    WO_CREATED: str                # ". <WO> 12345 <WO_CREATED>"
    AFTERMATH: tuple[str, ...]     # what followed a defect (each starts with ". ")
    VEHICLES: tuple[str, ...]
    TYRE_HEADS: tuple[str, ...]    # "{veh}", "{i}": vehicle and its number
    TREAD: str                     # ", <TREAD> 7,5 mm"
    BATTERY: str                   # "{v}": voltage, "{u}": "V" or VOLTS
    VOLTS: str
    CHARGING: str                  # "{v}": voltage
    PHASES: tuple[str, ...]
    INSULATION: str                # "{ph}": phase, "{r}": megaohms
    TIME_SPENT: str                # ", <TIME_SPENT> 2,5 <HOURS>"
    HOURS: str
    FASTENERS: tuple[str, ...]
    TO: str                        # "<fasteners> <torqued> <TO> 45 Nm"
    TORQUE_NOTES: tuple[str, ...]
    WEAR_PARTS: tuple[str, ...]
    THICKNESS: str
    MM: tuple[str, ...]
    LIMIT: str                     # ", <LIMIT> 2,0 <MILLIMETERS>"
    MILLIMETERS: str
    READING_AT: str                # "{h}", "{m}": hour and minutes
    LIMITS: tuple[str, ...]

    # --- grammar hooks (each subclass) ---------------------------------------
    def inspected(self, g: str) -> str:
        """One participle 'inspected', agreeing with gender ``g``."""
        raise NotImplementedError

    def replaced(self, verb: str, part: str, name: str, g: str) -> str:
        raise NotImplementedError

    def defect_on(self, defect: str, name: str, g: str) -> str:
        raise NotImplementedError

    def found_defect(self, defect: str, name: str, g: str) -> str:
        raise NotImplementedError

    def wo_task(self, name: str, g: str) -> str:
        raise NotImplementedError

    def wo_closed(self, name: str, g: str) -> str:
        raise NotImplementedError

    def torqued(self, fasteners: str) -> str:
        raise NotImplementedError

    def reading_on(self, name: str, g: str) -> str:
        raise NotImplementedError

    def on(self, name: str, g: str) -> str:
        """'on the <name>' after a reading that is out of limits."""
        raise NotImplementedError

    # --- the skeleton -------------------------------------------------------
    def sentence(self):
        r = self.r
        t = r.random()
        if t < 0.25:  # device inspected, readings
            name, d = self.devname()
            rd = self.readings(d[1], r.choice((1, 2, 2, 3, 3)))
            s = f"{cap(name)} {self.inspected(d[2])}, {self.join(rd)}"
            if r.random() < 0.3:
                s += f", {r.choice(self.OK)}"
            return s + "."
        if t < 0.35:  # colon form
            name, d = self.devname()
            rd = self.readings(d[1], r.choice((1, 2, 3)))
            return f"{cap(name)}{self.COLON}{self.join(rd)}."
        if t < 0.47:  # replaced part
            name, d = self.devname()
            part = r.choice(PARTS[self.lang])
            s = self.replaced(r.choice(self.REPLACE), part, name, d[2])
            k = r.random()
            if k < 0.35:
                s += f", {self.TORQUED} {r.choice((25, 30, 40, 45, 50, 65, 80, 120, 210))} {r.choice(self.NM)}"
            elif k < 0.55:
                s += f", {self.SERIAL} {self.serial()}"
            elif k < 0.7:
                s += self.AFTER_HOURS.format(h=r.randint(800, 24000))
            return s + "."
        if t < 0.57:  # defect
            name, d = self.devname()
            defect = r.choice(DEFECTS[self.lang])
            if r.random() < 0.5:
                s = self.defect_on(defect, name, d[2])
            else:
                s = self.found_defect(defect, name, d[2])
            if r.random() < 0.45:
                s += f", {self.reading(d[1])[1]}"
            if r.random() < 0.4:
                s += f". {self.WO} {self.wo()} {self.WO_CREATED}"
            elif r.random() < 0.3:
                s += r.choice(self.AFTERMATH)
            return s + "."
        if t < 0.64:  # tyres
            veh = r.choice(self.VEHICLES)
            parts = [f"{p} {self.tyre(veh)} bar" for p in TYRES[self.lang]]
            i = r.randint(1, 40)
            s = f"{r.choice(self.TYRE_HEADS).format(veh=veh, i=i)}{self.COLON}{self.join(parts)}"
            if r.random() < 0.3:
                s += f", {self.TREAD} {self.n(1.6, 12, 1)} {self.MILLIMETERS}"
            return s + "."
        if t < 0.71:  # battery / insulation
            if r.random() < 0.5:
                s = self.BATTERY.format(v=self.n(11.6, 13.9, 1), u=r.choice(("V", self.VOLTS)))
                if r.random() < 0.5:
                    s += self.CHARGING.format(v=self.n(13.8, 14.6, 1))
            else:
                s = self.INSULATION.format(ph=r.choice(self.PHASES), r=r.randint(5, 2500))
            return s + "."
        if t < 0.79:  # work order
            name, d = self.devname()
            if r.random() < 0.5:
                s = self.wo_task(name, d[2])
            else:
                s = self.wo_closed(name, d[2])
            if r.random() < 0.3:
                s += f", {self.TIME_SPENT} {self.n(0.5, 8, 1)} {self.HOURS}"
            return s + "."
        if t < 0.85:  # torque
            fast = r.choice(self.FASTENERS)
            val = r.choice((8, 10, 12, 25, 35, 45, 50, 65, 85, 110, 120, 180, 250, 300, 450))
            s = f"{fast} {self.torqued(fast)} {self.TO} {val} {r.choice(self.NM)}"
            if r.random() < 0.3:
                s += r.choice(self.TORQUE_NOTES)
            return s + "."
        if t < 0.9:  # wear
            part = r.choice(self.WEAR_PARTS)
            s = f"{part}, {self.THICKNESS} {self.n(1.5, 14, 1)} {r.choice(self.MM)}"
            if r.random() < 0.6:
                s += f", {self.LIMIT} {self.n(1, 4, 1)} {self.MILLIMETERS}"
            return s + "."
        if t < 0.95:  # a reading, maybe timed
            name, d = self.devname()
            key, rd = self.reading(d[1])
            s = self.reading_on(name, d[2])
            if r.random() < 0.4:
                s += self.READING_AT.format(h=r.randint(6, 22), m=r.choice(("00", "15", "30", "45", "10", "20")))
            return s + f"{self.COLON}{rd}."
        # alarm / limit
        name, d = self.devname()
        key, rd = self.reading(d[1])
        return f"{cap(rd)} {self.on(name, d[2])}, {r.choice(self.LIMITS)}."


class MaintES(MaintRomance):
    INSPECT = ["inspeccionado", "revisado", "comprobado", "verificado", "probado"]
    INSPECT_F = ["inspeccionada", "revisada", "comprobada", "verificada", "probada"]
    OK = ["todos los valores dentro de límites", "sin anomalías", "en buen estado", "correcto",
          "dentro de tolerancia", "no requiere acción", "sin fugas", "funcionamiento normal"]
    COLON = ": "
    REPLACE = ("Sustituido", "Cambiado", "Se sustituye", "Se cambia", "Montado nuevo")
    TORQUED = "tornillos apretados a"
    NM = ("Nm", "newton metro")
    SERIAL = "número de serie"
    AFTER_HOURS = " tras {h} horas de funcionamiento"
    WO = "Orden de trabajo"
    WO_CREATED = "creada"
    AFTERMATH = (". Se informa al jefe de turno", ". Equipo fuera de servicio",
                 ". Reparación prevista en la próxima parada", ". Repuesto pedido")
    VEHICLES = ("Camión", "Carretilla", "Furgoneta", "Remolque", "Vehículo", "Autobús")
    TYRE_HEADS = ("{veh} {i}, presión de neumáticos", "Presión de neumáticos", "Presiones de ruedas")
    TREAD = "profundidad del dibujo"
    BATTERY = "Tensión de batería {v} {u}"
    VOLTS = "voltios"
    CHARGING = ", tensión de carga {v} V"
    PHASES = ("L1", "L2", "L3", "fase 1", "fase 2")
    INSULATION = "Resistencia de aislamiento {ph} a tierra {r} megaohmios"
    WO_TASKS = ("limpieza", "ajuste", "engrase", "sustitución", "reparación")
    TIME_SPENT = "tiempo empleado"
    HOURS = "horas"
    FASTENERS = ("Tuercas de rueda", "Tornillos de culata", "Tornillos de brida", "Tornillos de anclaje",
                 "Tornillos de fijación", "Conexiones de las barras")
    TO = "a"
    TORQUE_NOTES = (" en cruz", ", marcados con pintura", ", todo correcto")
    WEAR_PARTS = ("Pastilla de freno", "Forro de freno", "Disco de embrague", "Placa de desgaste", "Casquillo")
    THICKNESS = "espesor"
    MM = ("milímetros", "mm")
    LIMIT = "límite"
    MILLIMETERS = "milímetros"
    READING_AT = " a las {h}:{m}"
    LIMITS = ("por encima del límite de alarma", "por debajo del mínimo", "ligeramente alta",
              "de nuevo normal", "cerca del nivel de disparo")

    @staticmethod
    def el(name, g):
        return f"el {name}" if g == "m" else f"la {name}"

    @staticmethod
    def de(name, g):
        return f"del {name}" if g == "m" else f"de la {name}"

    def inspected(self, g):
        return self.r.choice(self.INSPECT_F if g == "f" else self.INSPECT)

    def replaced(self, verb, part, name, g):
        return f"{verb} {part} {self.de(name, g)}"

    def defect_on(self, defect, name, g):
        # the choice between two equal words is kept: it draws a number, and the corpora depend on it
        return f"{cap(defect)} {self.r.choice(('en', 'en'))} {self.el(name, g)}"

    def found_defect(self, defect, name, g):
        return f"Se detecta {defect} {self.de(name, g)}"

    def wo_task(self, name, g):
        r = self.r
        s = (f"{self.WO} {self.wo()}, {r.choice(self.WO_TASKS)} {r.choice(('de la', 'del'))} "
             f"{r.choice(PARTS['es'])} {self.de(name, g)}")
        return s.replace("de la kit", "del kit")

    def wo_closed(self, name, g):
        o = "a" if g == "f" else "o"
        wo = self.wo()
        done = self.r.choice(("de nuevo en servicio", f"liberad{o} para producción", f"operativ{o}"))
        return f"{self.WO} {wo} cerrada, {name} {done}"

    def torqued(self, fasteners):
        return "apretadas" if fasteners.startswith(("Tuercas", "Conexiones")) else "apretados"

    def reading_on(self, name, g):
        return f"Lectura en {self.el(name, g)}"

    def on(self, name, g):
        return f"en {self.el(name, g)}"


class MaintFR(MaintRomance):
    INSPECT = ["inspecté", "contrôlé", "vérifié", "testé", "révisé"]
    OK = ["toutes les valeurs dans les limites", "aucune anomalie", "bon état", "RAS",
          "dans la tolérance", "aucune action requise", "pas de fuite", "fonctionnement normal"]
    COLON = " : "
    REPLACE = ("Remplacement", "Changement", "Montage")
    TORQUED = "vis serrées à"
    NM = ("Nm", "newtons mètres")
    SERIAL = "numéro de série"
    AFTER_HOURS = " après {h} heures de fonctionnement"
    WO = "Ordre de travail"
    WO_CREATED = "créé"
    AFTERMATH = (". Chef d'équipe prévenu", ". Équipement consigné",
                 ". Réparation prévue au prochain arrêt", ". Pièce commandée")
    VEHICLES = ("Camion", "Chariot", "Fourgon", "Remorque", "Véhicule", "Bus")
    TYRE_HEADS = ("{veh} {i}, pression des pneus", "Pression des pneus", "Pressions pneumatiques")
    TREAD = "profondeur de sculpture"
    BATTERY = "Tension batterie {v} {u}"
    VOLTS = "volts"
    CHARGING = ", tension de charge {v} V"
    PHASES = ("L1", "L2", "L3", "phase 1", "phase 2")
    INSULATION = "Résistance d'isolement {ph} terre {r} mégohms"
    WO_TASKS = ("nettoyage", "réglage", "graissage", "remplacement", "réparation")
    TIME_SPENT = "temps passé"
    HOURS = "heures"
    FASTENERS = ("Écrous de roue", "Vis de culasse", "Boulons de bride", "Boulons d'ancrage",
                 "Vis de fixation", "Connexions du jeu de barres")
    TO = "à"
    TORQUE_NOTES = (" en croix", ", marqués à la peinture", ", tout est conforme")
    WEAR_PARTS = ("Plaquette de frein", "Garniture de frein", "Disque d'embrayage", "Plaque d'usure", "Bague")
    THICKNESS = "épaisseur"
    MM = ("millimètres", "mm")
    LIMIT = "limite"
    MILLIMETERS = "millimètres"
    READING_AT = " à {h}h{m}"
    LIMITS = ("au-dessus du seuil d'alarme", "en dessous du minimum", "légèrement élevée",
              "revenue à la normale", "proche du seuil de déclenchement")

    FEM_PARTS = {"courroie trapézoïdale", "courroie d'entraînement", "courroie de distribution", "roue",
                 "électrovanne", "fin de course"}

    @staticmethod
    def de(name, g):
        if name[0] in "aeiouéèêâôhAEIOUÉ":
            return f"de l'{name}"
        return f"du {name}" if g == "m" else f"de la {name}"

    def de_part(self, part):
        if part.startswith("plaquettes"):
            return f"des {part}"
        return self.de(part, "f" if part in self.FEM_PARTS else "m")

    @staticmethod
    def le(name, g):
        if name[0] in "aeiouéèêâôhAEIOUÉ":
            return f"l'{name}"
        return f"le {name}" if g == "m" else f"la {name}"

    def inspected(self, g):
        return self.r.choice(self.INSPECT) + ("e" if g == "f" else "")

    def replaced(self, verb, part, name, g):
        return f"{verb} {self.de_part(part)} sur {self.le(name, g)}"

    def defect_on(self, defect, name, g):
        return f"{cap(defect)} sur {self.le(name, g)}"

    def found_defect(self, defect, name, g):
        return f"Constaté {defect} sur {self.le(name, g)}"

    def wo_task(self, name, g):
        r = self.r
        return (f"{self.WO} {self.wo()}, {r.choice(self.WO_TASKS)} "
                f"{self.de_part(r.choice(PARTS['fr']))} {self.de(name, g)}")

    def wo_closed(self, name, g):
        e, le = ("e", "le") if g == "f" else ("", "")
        wo = self.wo()
        done = self.r.choice((f"remis{e} en service", "disponible pour la production", f"opérationnel{le}"))
        return f"{self.WO} {wo} clôturé, {name} {done}"

    def torqued(self, fasteners):
        return "serrés"

    def reading_on(self, name, g):
        return f"Relevé sur {self.le(name, g)}"

    def on(self, name, g):
        return f"sur {self.le(name, g)}"
