"""Vocabulary and template tables of the in-car command generator, one dict per language.

en: vocabulary only (its sentence code in ``corpgen_incar.py`` keeps its own template lists).
es, fr: vocabulary plus the template lists of the shared Spanish/French skeleton
(``InCarRomance.sentence``): both languages have the same keys, which that skeleton reads.
Templates are ``str.format`` patterns; the placeholder names are listed per key.

Pure data, kept in one file.  Every list's order is part of the generated output (``rng.choice``
picks by index): reordering, adding or removing an entry changes the committed corpora
(``generate.py --write-splits --check`` shows it).
"""
from __future__ import annotations

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
    # ---------------------------------------------------------------- es
    "es": {
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
        # templates of InCarRomance.sentence ------------------------------
        "climate": ("pon la temperatura a {t}", "sube la temperatura a {t}", "baja la temperatura a {t}",
                    "temperatura a {t}", "pon el lado del {s} a {t}", "enciende el aire acondicionado",
                    "apaga el aire acondicionado", "enciende la calefacción", "apaga la calefacción",
                    "activa el desempañador", "desempaña el parabrisas", "activa la recirculación",
                    "desactiva la recirculación", "pon el ventilador al nivel {n}", "sube el ventilador",
                    "baja el ventilador", "enciende la calefacción del asiento",
                    "enciende la calefacción del asiento del {s}", "pon la calefacción del asiento al nivel {l}",
                    "enciende el volante calefactado", "activa la ventilación del asiento", "hace mucho calor",
                    "tengo frío"),                                             # {t} {s} {n} {l}
        "climate_sides": ("conductor", "acompañante"),
        "degrees": "grados",
        "windows": ("abre la ventanilla del {s}", "cierra la ventanilla del {s}", "baja la ventanilla del {s}",
                    "sube la ventanilla del {s}", "abre la ventanilla del {s} hasta la mitad",
                    "abre la ventanilla del {s} un {p} por ciento", "cierra todas las ventanillas",
                    "abre el techo solar", "cierra el techo solar", "abre el maletero", "bloquea las puertas",
                    "desbloquea las puertas", "enciende las luces interiores", "apaga las luces interiores",
                    "pon la luz ambiental en {c}", "enciende los antinieblas", "enciende las luces largas",
                    "activa los limpiaparabrisas", "pon el brillo de la pantalla al {p} por ciento",
                    "activa el modo nocturno"),                                # {s} {p} {c}
        "window_sides": ("conductor", "acompañante", "lado izquierdo", "lado derecho"),
        "colors": ("azul", "rojo", "verde", "morado", "blanco"),
        "media": ("pon {g}", "reproduce {g}", "pon música de {a}", "pon canciones de {a}",
                  "quiero escuchar a {a}", "pon {a} en Spotify", "siguiente canción", "canción anterior",
                  "salta esta canción", "pausa la música", "pausa", "continúa", "reanuda la reproducción",
                  "para la música", "repite esta canción", "activa el modo aleatorio", "silencio",
                  "sube el volumen", "baja el volumen", "pon el volumen a {v}", "volumen {v}",
                  "más alto", "más bajo", "cambia a la radio", "cambia a Bluetooth", "cambia a USB",
                  "sintoniza la {fm}", "pon la {fm} FM", "siguiente emisora", "emisora anterior",
                  "guarda esta emisora", "enciende la radio", "apaga la radio"),  # {g} {a} {v} {fm}
        "fm_point": ".",
        "poi_questions": ("dónde", "hay"),
        "address": ("navega a {st} {n}", "llévame a {st} {n}, {city}", "navega a {city}",
                    "cómo llego a {city}", "pon como destino {st} {n}"),     # {st} {n} {city}
        "address_questions": ("cómo",),
        "route": ("llévame a casa", "vamos a casa", "llévame al trabajo", "cancela la navegación",
                  "cancela la ruta", "evita los peajes", "evita las autopistas", "busca una ruta más rápida",
                  "acerca el mapa", "aleja el mapa", "silencia la navegación",
                  "añade una parada en una gasolinera", "repite la última indicación"),
        "trip_questions": ("cuánto falta para llegar", "a qué hora llegamos", "cuántos kilómetros quedan",
                           "cómo está el tráfico", "cuál es el límite de velocidad aquí", "dónde estoy",
                           "cuánta autonomía me queda"),
        "call": ("llama a {w}", "llama a {w}", "llama a {w} al móvil", "marca a {w}",
                 "haz una llamada a {w}"),                                      # {w}
        "messages": ("llego tarde", "llego en {m} minutos", "estoy de camino", "estoy en un atasco",
                     "te llamo luego", "ya casi estoy en casa", "empezad sin mí"),  # {m}
        "send": ("envía un mensaje a {w} diciendo {m}", "manda un mensaje a {w}: {m}",
                 "dile a {w} que {m}"),                                         # {w} {m}
        "phone_misc": ("lee mis mensajes", "lee el último mensaje", "contesta la llamada", "rechaza la llamada",
                       "cuelga", "vuelve a llamar", "muestra las llamadas perdidas"),
        "info_questions": ("qué tiempo hace en {c}", "qué tiempo hará mañana en {c}", "va a llover mañana",
                           "qué hora es", "qué temperatura hace fuera", "cuánta gasolina me queda",
                           "cuál es la presión de los neumáticos", "qué tengo hoy en el calendario"),  # {c}
        "assistant": ("recuérdame {task} a las {h}", "pon un recordatorio a las {h}",
                      "pon un temporizador de {m} minutos", "activa el control de crucero",
                      "pon el limitador a {k} kilómetros por hora", "activa el asistente de carril",
                      "desactiva el asistente de carril", "muestra la cámara trasera", "cambia al modo deportivo",
                      "cambia al modo eco", "abre los ajustes", "conecta mi teléfono",
                      "activa el modo no molestar"),                            # {task} {h} {m} {k}
        "limiter_speeds": (50, 80, 90, 100, 120),
        "tasks": ("llamar a mamá", "hacer la compra", "recoger a los niños", "cargar el coche",
                  "pedir cita en el taller"),
    },
    # ---------------------------------------------------------------- fr
    "fr": {
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
        # templates of InCarRomance.sentence ------------------------------
        "climate": ("mets la température à {t}", "règle la température à {t}", "monte la température à {t}",
                    "baisse la température à {t}", "température à {t}", "mets le côté {s} à {t}",
                    "allume la climatisation", "éteins la climatisation", "allume le chauffage",
                    "éteins le chauffage", "active le désembuage", "désembue le pare-brise",
                    "active le recyclage de l'air", "désactive le recyclage de l'air",
                    "mets la ventilation au niveau {n}", "augmente la ventilation", "baisse la ventilation",
                    "allume le siège chauffant", "allume le siège chauffant {s}",
                    "mets le siège chauffant au niveau {l}", "allume le volant chauffant",
                    "active la ventilation du siège", "il fait trop chaud", "j'ai froid"),  # {t} {s} {n} {l}
        "climate_sides": ("conducteur", "passager"),
        "degrees": "degrés",
        "windows": ("ouvre la fenêtre {s}", "ferme la fenêtre {s}", "baisse la vitre {s}", "remonte la vitre {s}",
                    "ouvre la fenêtre {s} à moitié", "ouvre la vitre {s} de {p} pour cent",
                    "ferme toutes les fenêtres", "ouvre le toit ouvrant", "ferme le toit ouvrant",
                    "ouvre le coffre", "verrouille les portes", "déverrouille les portes",
                    "allume le plafonnier", "éteins le plafonnier", "mets l'éclairage d'ambiance en {c}",
                    "allume les antibrouillards", "allume les feux de route", "active les essuie-glaces",
                    "règle la luminosité de l'écran à {p} pour cent", "active le mode nuit"),  # {s} {p} {c}
        "window_sides": ("conducteur", "passager", "arrière gauche", "arrière droite", "avant"),
        "colors": ("bleu", "rouge", "vert", "violet", "blanc"),
        "media": ("mets {g}", "joue {g}", "mets de la musique de {a}", "mets des chansons de {a}",
                  "je veux écouter {a}", "mets {a} sur Spotify", "chanson suivante", "chanson précédente",
                  "passe cette chanson", "mets la musique en pause", "pause", "reprends la lecture",
                  "arrête la musique", "répète cette chanson", "active la lecture aléatoire", "coupe le son",
                  "monte le volume", "baisse le volume", "mets le volume à {v}", "volume {v}",
                  "plus fort", "moins fort", "passe à la radio", "passe en Bluetooth", "passe en USB",
                  "mets {fm}", "mets la radio sur {fm} FM", "station suivante", "station précédente",
                  "enregistre cette station", "allume la radio", "éteins la radio"),  # {g} {a} {v} {fm}
        "fm_point": ",",
        "poi_questions": ("où", "y a"),
        "address": ("va au {n} {st}", "emmène-moi au {n} {st} à {city}", "va à {city}",
                    "itinéraire vers {city}", "définis la destination {n} {st}"),  # {st} {n} {city}
        "address_questions": (),
        "route": ("rentre à la maison", "emmène-moi à la maison", "emmène-moi au travail",
                  "annule la navigation", "annule l'itinéraire", "évite les péages", "évite les autoroutes",
                  "trouve un itinéraire plus rapide", "zoome sur la carte", "dézoome",
                  "coupe le guidage vocal", "ajoute une étape dans une station-service",
                  "répète la dernière instruction"),
        "trip_questions": ("combien de temps avant d'arriver", "à quelle heure on arrive",
                           "combien de kilomètres reste-t-il", "comment est la circulation",
                           "quelle est la limitation de vitesse ici", "où suis-je", "quelle est mon autonomie"),
        "call": ("appelle {w}", "appelle {w}", "appelle {w} sur son portable", "téléphone à {w}",
                 "passe un appel à {w}"),                                       # {w}
        "messages": ("je suis en retard", "j'arrive dans {m} minutes", "je suis en route",
                     "je suis dans les bouchons", "je te rappelle", "je suis presque arrivé",
                     "commencez sans moi"),                                     # {m}
        "send": ("envoie un message à {w} : {m}", "envoie un SMS à {w} pour dire {m}",
                 "dis à {w} que {m}"),                                          # {w} {m}
        "phone_misc": ("lis mes messages", "lis le dernier message", "décroche", "refuse l'appel",
                       "raccroche", "rappelle le dernier numéro", "affiche les appels manqués"),
        "info_questions": ("quel temps fait-il à {c}", "quel temps fera-t-il demain à {c}",
                           "va-t-il pleuvoir demain", "quelle heure est-il", "quelle est la température extérieure",
                           "combien d'essence me reste-t-il", "quelle est la pression des pneus",
                           "qu'est-ce que j'ai dans mon agenda aujourd'hui"),  # {c}
        "assistant": ("rappelle-moi de {task} à {h}", "mets un rappel à {h}", "lance un minuteur de {m} minutes",
                      "active le régulateur de vitesse", "règle le limiteur à {k} kilomètres par heure",
                      "active l'aide au maintien de voie", "désactive l'aide au maintien de voie",
                      "affiche la caméra de recul", "passe en mode sport", "passe en mode éco",
                      "ouvre les réglages", "connecte mon téléphone",
                      "active le mode ne pas déranger"),                        # {task} {h} {m} {k}
        "limiter_speeds": (50, 80, 90, 110, 130),
        "tasks": ("appeler maman", "faire les courses", "chercher les enfants", "recharger la voiture",
                  "prendre rendez-vous au garage"),
    },
}
